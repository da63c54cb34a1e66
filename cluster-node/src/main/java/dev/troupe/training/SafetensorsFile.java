package dev.troupe.training;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.troupe.protocol.Json;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Reads and writes F32 safetensors files (8-byte little-endian header length, JSON header with
 * {@code dtype}, {@code shape}, {@code data_offsets} and optional {@code __metadata__}, raw data),
 * the format PEFT stores adapters in. Writes go to a temporary file that is moved into place, so a
 * reader never sees half a file.
 */
public final class SafetensorsFile {
  private SafetensorsFile() {}

  /** A tensor: row-major values and shape. */
  public record Tensor(float[] values, long[] shape) {
    public Tensor {
      long n = 1;
      for (long s : shape) n *= s;
      if (n != values.length) throw new IllegalArgumentException("shape does not match values");
    }
  }

  /** Tensors and the header's string metadata. */
  public record Contents(Map<String, Tensor> tensors, Map<String, String> metadata) {}

  public static void write(Path file, Map<String, Tensor> tensors, Map<String, String> metadata)
      throws IOException {
    ObjectNode header = Json.mapper().createObjectNode();
    if (!metadata.isEmpty()) {
      ObjectNode meta = header.putObject("__metadata__");
      metadata.forEach(meta::put);
    }
    long offset = 0;
    for (Map.Entry<String, Tensor> e : tensors.entrySet()) {
      ObjectNode t = header.putObject(e.getKey());
      t.put("dtype", "F32");
      var shape = t.putArray("shape");
      for (long s : e.getValue().shape()) shape.add(s);
      long bytes = 4L * e.getValue().values().length;
      t.putArray("data_offsets").add(offset).add(offset + bytes);
      offset += bytes;
    }
    byte[] json = Json.mapper().writeValueAsBytes(header);
    int pad =
        (8 - json.length % 8) % 8; // keep the data 8-byte aligned, as the reference writer does
    byte[] headerBytes = new byte[json.length + pad];
    System.arraycopy(json, 0, headerBytes, 0, json.length);
    for (int i = json.length; i < headerBytes.length; i++) headerBytes[i] = ' ';
    ByteBuffer buf =
        ByteBuffer.allocate((int) (8 + headerBytes.length + offset)).order(ByteOrder.LITTLE_ENDIAN);
    buf.putLong(headerBytes.length).put(headerBytes);
    for (Tensor t : tensors.values()) for (float v : t.values()) buf.putFloat(v);
    Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
    Files.write(tmp, buf.array());
    Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
  }

  public static Contents read(Path file) throws IOException {
    byte[] all = Files.readAllBytes(file);
    ByteBuffer buf = ByteBuffer.wrap(all).order(ByteOrder.LITTLE_ENDIAN);
    long headerLen = buf.getLong();
    if (headerLen < 2 || headerLen > all.length - 8)
      throw new IOException(file + ": invalid safetensors header length");
    JsonNode header =
        Json.mapper().readTree(new String(all, 8, (int) headerLen, StandardCharsets.UTF_8));
    int base = 8 + (int) headerLen;
    Map<String, Tensor> tensors = new LinkedHashMap<>();
    Map<String, String> metadata = new LinkedHashMap<>();
    for (Map.Entry<String, JsonNode> e : header.properties()) {
      if (e.getKey().equals("__metadata__")) {
        e.getValue().properties().forEach(m -> metadata.put(m.getKey(), m.getValue().asText()));
        continue;
      }
      JsonNode t = e.getValue();
      if (!t.path("dtype").asText().equals("F32"))
        throw new IOException(file + ": " + e.getKey() + " is not F32");
      long[] shape = new long[t.path("shape").size()];
      for (int i = 0; i < shape.length; i++) shape[i] = t.path("shape").get(i).asLong();
      long from = t.path("data_offsets").get(0).asLong();
      long to = t.path("data_offsets").get(1).asLong();
      float[] v = new float[(int) ((to - from) / 4)];
      ByteBuffer slice =
          ByteBuffer.wrap(all, base + (int) from, (int) (to - from)).order(ByteOrder.LITTLE_ENDIAN);
      for (int i = 0; i < v.length; i++) v[i] = slice.getFloat();
      tensors.put(e.getKey(), new Tensor(v, shape));
    }
    return new Contents(tensors, metadata);
  }
}
