package dev.troupe.engine.model;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.MappedByteBuffer;
import java.nio.ShortBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SortedSet;
import java.util.TreeMap;

/**
 * Reads Hugging Face safetensors weights (one {@code model.safetensors}, or shards listed in {@code
 * model.safetensors.index.json}). All headers are parsed and checked against the file sizes when
 * opened, so a truncated or malformed file fails here, naming file and tensor. Tensor data is
 * memory-mapped piecewise and copied out as stored, as 16-bit values or converted to FP32 ({@link
 * WeightSource}): the loader never holds the file and the loaded model at once beyond one mapped
 * window. The project's only safetensors reader (models, adapters, optimizer state); {@link
 * SafetensorsWriter} writes the format.
 */
public final class SafetensorsWeights implements WeightSource {
  public static final String SINGLE_FILE = "model.safetensors";
  public static final String INDEX_FILE = "model.safetensors.index.json";
  private static final long MAX_HEADER = 100L << 20;
  private static final long WINDOW = 256L << 20;
  private static final ObjectMapper JSON = new ObjectMapper();

  /** A tensor's location; {@code unsupported} says why it cannot be read (only if asked for). */
  private record Entry(
      TensorInfo info, FileChannel channel, long offset, long bytes, String unsupported) {}

  private final Map<String, Entry> entries;
  private final List<FileChannel> channels;
  private final String origin;
  private final Map<String, String> metadata;

  private SafetensorsWeights(
      Map<String, Entry> entries,
      List<FileChannel> channels,
      String origin,
      Map<String, String> metadata) {
    this.entries = entries;
    this.channels = channels;
    this.origin = origin;
    this.metadata = Collections.unmodifiableMap(metadata);
  }

  /** The string entries of the headers' {@code __metadata__} (all files merged). */
  public Map<String, String> metadata() {
    return metadata;
  }

  @Override
  public String origin() {
    return origin;
  }

  /**
   * Opens the weights of a model directory: the index if present, else {@code model.safetensors}.
   */
  public static SafetensorsWeights open(Path dir) {
    Path index = dir.resolve(INDEX_FILE);
    if (Files.isRegularFile(index)) return openSharded(index);
    Path single = dir.resolve(SINGLE_FILE);
    if (Files.isRegularFile(single)) return openFiles(List.of(single), null);
    throw new ModelLoadException(
        "no " + SINGLE_FILE + " or " + INDEX_FILE + " in " + dir.toAbsolutePath());
  }

  /** Opens one safetensors file, whatever its tensors (e.g. a PEFT adapter). */
  public static SafetensorsWeights openFile(Path file) {
    if (!Files.isRegularFile(file)) throw new ModelLoadException("no such file " + file);
    return openFiles(List.of(file), null);
  }

  private static SafetensorsWeights openSharded(Path index) {
    JsonNode weightMap;
    try {
      weightMap = JSON.readTree(index.toFile()).get("weight_map");
    } catch (IOException e) {
      throw new ModelLoadException(index + ": unreadable index: " + e.getMessage(), e);
    }
    if (weightMap == null || !weightMap.isObject())
      throw new ModelLoadException(index + ": no weight_map object");
    Map<String, String> mapping = new LinkedHashMap<>();
    for (Map.Entry<String, JsonNode> e : weightMap.properties())
      mapping.put(e.getKey(), e.getValue().asText());
    List<Path> files = mapping.values().stream().distinct().map(index::resolveSibling).toList();
    return openFiles(files, mapping);
  }

  private static SafetensorsWeights openFiles(List<Path> files, Map<String, String> mapping) {
    Map<String, Entry> entries = new TreeMap<>();
    Map<String, String> metadata = new LinkedHashMap<>();
    List<FileChannel> channels = new ArrayList<>();
    try {
      for (Path file : files) {
        FileChannel ch;
        try {
          ch = FileChannel.open(file, StandardOpenOption.READ);
        } catch (IOException e) {
          throw new ModelLoadException(file + ": cannot open weight file: " + e, e);
        }
        channels.add(ch);
        for (Map.Entry<String, Entry> ne : readHeader(file, ch, metadata).entrySet()) {
          String name = ne.getKey();
          Entry e = ne.getValue();
          if (mapping != null
              && mapping.containsKey(name)
              && !file.getFileName().toString().equals(mapping.get(name))) continue;
          entries.put(name, e);
        }
      }
      if (mapping != null)
        for (Map.Entry<String, String> m : mapping.entrySet())
          if (!entries.containsKey(m.getKey()))
            throw new ModelLoadException(
                files.get(0).resolveSibling(m.getValue())
                    + ": the index lists tensor "
                    + m.getKey()
                    + " in this file but the file has no such tensor");
    } catch (RuntimeException e) {
      closeAll(channels);
      throw e;
    }
    return new SafetensorsWeights(
        entries,
        channels,
        files.size() == 1 ? files.get(0).toString() : files.toString(),
        metadata);
  }

  private static Map<String, Entry> readHeader(
      Path file, FileChannel ch, Map<String, String> metadata) {
    try {
      long size = ch.size();
      if (size < 8)
        throw new ModelLoadException(file + ": truncated (" + size + " bytes, no header)");
      ByteBuffer len = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
      readFully(ch, len, 0);
      long n = len.flip().getLong();
      if (n <= 0 || n > MAX_HEADER || 8 + n > size)
        throw new ModelLoadException(
            file + ": bad safetensors header length " + n + " (file has " + size + " bytes)");
      ByteBuffer header = ByteBuffer.allocate((int) n);
      readFully(ch, header, 8);
      JsonNode root;
      try {
        root = JSON.readTree(header.array());
      } catch (IOException e) {
        throw new ModelLoadException(
            file + ": safetensors header is not valid JSON: " + e.getMessage(), e);
      }
      if (root == null || !root.isObject())
        throw new ModelLoadException(file + ": safetensors header is not a JSON object");
      long dataStart = 8 + n;
      long dataLen = size - dataStart;
      Map<String, Entry> out = new LinkedHashMap<>();
      for (Map.Entry<String, JsonNode> f : root.properties()) {
        if (f.getKey().equals("__metadata__")) {
          if (f.getValue().isObject())
            f.getValue().properties().forEach(m -> metadata.put(m.getKey(), m.getValue().asText()));
          continue;
        }
        out.put(f.getKey(), parseEntry(file, ch, f.getKey(), f.getValue(), dataStart, dataLen));
      }
      return out;
    } catch (IOException e) {
      throw new ModelLoadException(file + ": read failed: " + e, e);
    }
  }

  private static Entry parseEntry(
      Path file, FileChannel ch, String name, JsonNode t, long dataStart, long dataLen) {
    String where = file + ": tensor " + name;
    JsonNode dt = t.get("dtype");
    JsonNode shapeNode = t.get("shape");
    JsonNode offsets = t.get("data_offsets");
    if (dt == null
        || shapeNode == null
        || !shapeNode.isArray()
        || offsets == null
        || !offsets.isArray()
        || offsets.size() != 2)
      throw new ModelLoadException(where + ": header entry lacks dtype, shape or data_offsets");
    DType dtype = DType.fromSafetensors(dt.asText());
    if (dtype == null)
      return new Entry(
          null, ch, -1, -1, where + ": unsupported dtype " + dt.asText() + " (F32, BF16, F16 are)");
    List<Long> shape = new ArrayList<>();
    long numel = 1;
    for (JsonNode d : shapeNode) {
      if (!d.canConvertToLong() || d.asLong() < 0)
        throw new ModelLoadException(where + ": bad shape " + shapeNode);
      shape.add(d.asLong());
      numel = Math.multiplyExact(numel, d.asLong());
    }
    long begin = offsets.get(0).asLong();
    long end = offsets.get(1).asLong();
    if (begin < 0 || end < begin || end - begin != numel * dtype.bytes())
      throw new ModelLoadException(
          where + ": data_offsets " + offsets + " do not match shape " + shape + " of " + dtype);
    if (end > dataLen)
      throw new ModelLoadException(
          where
              + ": file truncated, tensor data ends at byte "
              + (dataStart + end)
              + " but the file has "
              + (dataStart + dataLen)
              + " bytes");
    return new Entry(
        new TensorInfo(name, dtype, shape, file.toString()),
        ch,
        dataStart + begin,
        end - begin,
        null);
  }

  private static void readFully(FileChannel ch, ByteBuffer buf, long pos) throws IOException {
    while (buf.hasRemaining()) {
      int r = ch.read(buf, pos);
      if (r < 0) throw new IOException("unexpected end of file");
      pos += r;
    }
  }

  @Override
  public SortedSet<String> names() {
    return Collections.unmodifiableSortedSet(new java.util.TreeSet<>(entries.keySet()));
  }

  @Override
  public TensorInfo info(String name) {
    return entry(name).info();
  }

  private Entry entry(String name) {
    Entry e = entries.get(name);
    if (e == null) throw new ModelLoadException(origin + ": missing tensor " + name);
    if (e.unsupported() != null) throw new ModelLoadException(e.unsupported());
    return e;
  }

  @Override
  public void copyTo(String name, long offset, int count, FloatBuffer dst) {
    DType t = entry(name).info().dtype();
    forEachWindow(
        name,
        offset,
        count,
        m -> {
          switch (t) {
            case F32 -> dst.put(m.asFloatBuffer());
            case BF16, F16 -> {
              ShortBuffer s = m.asShortBuffer();
              for (int i = 0, n = s.remaining(); i < n; i++) dst.put(t.toFloat(s.get(i)));
            }
          }
        });
  }

  @Override
  public void copyTo(String name, long offset, int count, ShortBuffer dst, DType as) {
    if (as == DType.F32) throw new IllegalArgumentException("F32 is not a 16-bit dtype");
    DType t = entry(name).info().dtype();
    forEachWindow(
        name,
        offset,
        count,
        m -> {
          if (t == as) {
            dst.put(m.asShortBuffer()); // verbatim: a BF16 checkpoint stays BF16
          } else if (t == DType.F32) {
            FloatBuffer f = m.asFloatBuffer();
            for (int i = 0, n = f.remaining(); i < n; i++) dst.put(as.fromFloat(f.get(i)));
          } else {
            ShortBuffer s = m.asShortBuffer();
            for (int i = 0, n = s.remaining(); i < n; i++)
              dst.put(as.fromFloat(t.toFloat(s.get(i))));
          }
        });
  }

  @Override
  public void copyStored(String name, long offset, int count, ByteBuffer dst) {
    forEachWindow(name, offset, count, dst::put);
  }

  /**
   * Maps elements {@code [offset, offset + count)} of tensor {@code name} window by window (at most
   * {@link #WINDOW} bytes, little-endian, positioned at 0) and hands each to {@code sink} in order.
   */
  private void forEachWindow(
      String name, long offset, int count, java.util.function.Consumer<ByteBuffer> sink) {
    Entry e = entry(name);
    int eb = e.info().dtype().bytes();
    if (offset < 0 || count < 0 || offset + count > e.info().numel())
      throw new IndexOutOfBoundsException(name + ": range " + offset + "+" + count);
    long start = e.offset() + offset * eb;
    long bytes = (long) count * eb;
    try {
      for (long done = 0; done < bytes; ) {
        long len = Math.min(WINDOW, bytes - done);
        MappedByteBuffer m = e.channel().map(FileChannel.MapMode.READ_ONLY, start + done, len);
        sink.accept(m.order(ByteOrder.LITTLE_ENDIAN));
        done += len;
      }
    } catch (IOException ex) {
      throw new ModelLoadException(
          e.info().origin() + ": tensor " + name + ": read failed: " + ex, ex);
    }
  }

  @Override
  public void close() {
    closeAll(channels);
  }

  private static void closeAll(List<FileChannel> channels) {
    for (FileChannel c : channels) {
      try {
        c.close();
      } catch (IOException ignored) {
        // read-only channel: nothing to flush
      }
    }
  }
}
