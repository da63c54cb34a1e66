package dev.troupe.worker.kv;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.troupe.engine.KvLayout;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.zip.CRC32C;
import org.apache.pekko.util.ByteString;

/**
 * The KV transfer channel's frames. On the wire every frame is a 4-byte big-endian length then its
 * payload (Pekko Streams' length-field framing); a payload starts with its kind:
 *
 * <ul>
 *   <li>{@code P} pull (decode → prefill): a JSON {@link Pull}; {@code X} the same, releasing the
 *       lease without reading it (the decode side refused the request);
 *   <li>{@code B} one block (prefill → decode): its index in the pull (int), the CRC32C of its
 *       bytes (int), its bytes;
 *   <li>{@code D} done: every block was sent; {@code E} refused or failed: a UTF-8 message.
 * </ul>
 */
final class KvFrames {
  static final byte PULL = 'P', RELEASE = 'X', BLOCK = 'B', DONE = 'D', ERROR = 'E';

  /** Bytes a request frame may have (a pull of a 128k-token prompt is a few hundred KB). */
  static final int MAX_REQUEST = 4 << 20;

  private static final ObjectMapper JSON =
      new ObjectMapper().configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);

  /**
   * What the decode side asks of a prefill replica.
   *
   * @param engineId the prefill replica's incarnation ({@code remote_engine_id})
   * @param lease the lease ({@code remote_request_id})
   * @param blocks the prefill side's block ids to send, in order
   * @param layout the decode side's layout (model and adapter identity included)
   */
  record Pull(String engineId, String lease, List<Integer> blocks, KvLayout layout) {}

  private KvFrames() {}

  static ByteString pull(byte kind, Pull p) {
    try {
      return frame(kind, JSON.writeValueAsBytes(p));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static Pull readPull(ByteString payload) {
    try {
      return JSON.readValue(payload.drop(1).toArray(), Pull.class);
    } catch (IOException e) {
      throw new IllegalArgumentException("unreadable pull request: " + e.getMessage(), e);
    }
  }

  static ByteString block(int index, byte[] data, int offset, int length) {
    CRC32C crc = new CRC32C();
    crc.update(data, offset, length);
    ByteBuffer head = ByteBuffer.allocate(4 + 1 + 8).order(ByteOrder.BIG_ENDIAN);
    head.putInt(1 + 8 + length).put(BLOCK).putInt(index).putInt((int) crc.getValue()).flip();
    return ByteString.fromByteBuffer(head).concat(ByteString.fromArray(data, offset, length));
  }

  static ByteString done() {
    return frame(DONE, new byte[0]);
  }

  static ByteString error(String message) {
    return frame(ERROR, message.getBytes(StandardCharsets.UTF_8));
  }

  static String errorText(ByteString payload) {
    return payload.drop(1).utf8String();
  }

  /** A received block frame's index, checked against its CRC32C; its bytes go into {@code out}. */
  static int readBlock(ByteString payload, byte[] out, int offset, int blockBytes) {
    ByteBuffer b = payload.asByteBuffer().order(ByteOrder.BIG_ENDIAN);
    b.get(); // kind
    int index = b.getInt();
    int crc = b.getInt();
    if (b.remaining() != blockBytes)
      throw new KvSource.KvRefused(
          "block " + index + " arrived with " + b.remaining() + " bytes, not " + blockBytes);
    b.get(out, offset, blockBytes);
    CRC32C check = new CRC32C();
    check.update(out, offset, blockBytes);
    if ((int) check.getValue() != crc)
      throw new KvSource.KvRefused("block " + index + " arrived corrupt (CRC32C mismatch)");
    return index;
  }

  private static ByteString frame(byte kind, byte[] payload) {
    ByteBuffer head = ByteBuffer.allocate(5).order(ByteOrder.BIG_ENDIAN);
    head.putInt(1 + payload.length).put(kind).flip();
    return ByteString.fromByteBuffer(head).concat(ByteString.fromArray(payload));
  }
}
