package dev.troupe.engine.model;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Map;

/**
 * Writes safetensors files (8-byte little-endian header length, JSON header with {@code dtype},
 * {@code shape}, {@code data_offsets} and {@code __metadata__}, padded with spaces to 8 bytes as
 * the reference writer does, then the raw data) from any {@link WeightSource}, tensor by tensor in
 * bounded chunks. The file is written beside its target and moved into place, so a reader never
 * sees half a file. {@link SafetensorsWeights} reads what this writes.
 */
public final class SafetensorsWriter {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final int CHUNK = 1 << 20; // elements per copy

  private SafetensorsWriter() {}

  /**
   * Writes tensors {@code names} of {@code src}, in that order, converted to {@code dtype} (null:
   * each as stored).
   */
  public static void write(
      Path file, WeightSource src, List<String> names, DType dtype, Map<String, String> metadata)
      throws IOException {
    ObjectNode header = JSON.createObjectNode();
    if (!metadata.isEmpty()) {
      ObjectNode meta = header.putObject("__metadata__");
      metadata.forEach(meta::put);
    }
    long offset = 0;
    for (String n : names) {
      WeightSource.TensorInfo t = src.info(n);
      DType d = dtype == null ? t.dtype() : dtype;
      ObjectNode e = header.putObject(n);
      e.put("dtype", d.name());
      ArrayNode shape = e.putArray("shape");
      t.shape().forEach(shape::add);
      long bytes = t.numel() * d.bytes();
      e.putArray("data_offsets").add(offset).add(offset + bytes);
      offset += bytes;
    }
    byte[] json = JSON.writeValueAsBytes(header);
    int pad = (8 - json.length % 8) % 8;
    ByteBuffer head = ByteBuffer.allocate(8 + json.length + pad).order(ByteOrder.LITTLE_ENDIAN);
    head.putLong(json.length + pad).put(json);
    for (int i = 0; i < pad; i++) head.put(" ".getBytes(StandardCharsets.US_ASCII));
    Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
    try (FileChannel ch =
        FileChannel.open(
            tmp,
            StandardOpenOption.CREATE,
            StandardOpenOption.TRUNCATE_EXISTING,
            StandardOpenOption.WRITE)) {
      writeFully(ch, head.flip());
      ByteBuffer buf = ByteBuffer.allocate(CHUNK * 4).order(ByteOrder.LITTLE_ENDIAN);
      for (String n : names) {
        WeightSource.TensorInfo t = src.info(n);
        DType d = dtype == null ? t.dtype() : dtype;
        for (long off = 0; off < t.numel(); off += CHUNK) {
          int count = (int) Math.min(CHUNK, t.numel() - off);
          buf.clear();
          if (d == t.dtype()) src.copyStored(n, off, count, buf);
          else if (d == DType.F32) {
            src.copyTo(n, off, count, buf.asFloatBuffer());
            buf.position(count * 4);
          } else {
            src.copyTo(n, off, count, buf.asShortBuffer(), d);
            buf.position(count * 2);
          }
          writeFully(ch, buf.flip());
        }
      }
      ch.force(true);
    }
    Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
  }

  private static void writeFully(FileChannel ch, ByteBuffer b) throws IOException {
    while (b.hasRemaining()) ch.write(b);
  }
}
