package dev.troupe.engine.cuda;

import dev.troupe.engine.DeviceSampling.Params;
import dev.troupe.engine.DeviceSampling.Result;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import java.util.function.IntFunction;

/**
 * Sampling on the device ({@code sample_rows}), so that a step's logits never leave the GPU: per
 * row the host sends its sampler's sparse state and one uniform number ({@link Params}), and gets
 * back the token, its raw logprob and rank, and the top-k raw logprobs — a few bytes per row
 * instead of a vocabulary-sized row.
 *
 * <p>Semantics are the CPU {@code Sampler}'s (vLLM V1's order): raw logprobs from the unprocessed
 * row; {@code allowed_token_ids}; masked ids (the {@code bad_words} ban and the {@code min_tokens}
 * stop ids the host computes per step); {@code logit_bias} (clamped by the host); repetition
 * penalty over prompt ∪ output; frequency and presence over output counts; greedy argmax (lowest id
 * on ties) or ÷ temperature, {@code min_p}, {@code top_k} (ties at the k-th value stay), {@code
 * top_p} (a token stays when the mass strictly above it is below top_p; ties at the boundary stay),
 * and an inverse-CDF draw over the kept tokens in token-id order with the uniform the host drew
 * from the choice's own seeded generator — the CPU sampler's order and draw, so the same uniform
 * picks the same token. Custom logits processors need the whole row: such rows stay on the host.
 */
public final class DeviceSampler {
  /** At most this many top logprobs per row. */
  public static final int MAX_TOP = dev.troupe.engine.DeviceSampling.MAX_TOP_LOGPROBS;

  static final int THREADS = 512;

  /** Ints per row in the packed parameters (the kernel's {@code ip} stride). */
  static final int ROW_INTS = 11;

  private DeviceSampler() {}

  /**
   * The rows' parameters packed for one upload: ip, fp, uniforms, ints, floats (bytes); {@code
   * bytes} holds what is used, {@code capacity} bytes are reserved on the device.
   */
  record Packed(
      ByteBuffer bytes, long ip, long fp, long uniforms, long ints, long floats, long capacity) {}

  /**
   * Packs {@code rows}; row i samples logits row {@code source[i]} of the step (the kernel is told
   * which logit rows its launch holds).
   */
  static Packed pack(List<Params> rows, int[] source) {
    return pack(rows, source, bytes -> ByteBuffer.allocateDirect(bytes));
  }

  /** {@link #pack(List, int[])} into {@code buffer.apply(bytes)} (position 0, limit bytes). */
  static Packed pack(List<Params> rows, int[] source, IntFunction<ByteBuffer> buffer) {
    int[] need = listLengths(rows);
    return pack(rows, source, need[0], need[1], buffer);
  }

  /**
   * The ints and floats of {@code rows}' lists (allowed, masked, bias, seen and count ids; bias
   * values and the three penalties): the two variable-length sections of the packed parameters.
   */
  static int[] listLengths(List<Params> rows) {
    int nInts = 0, nFloats = 0;
    for (Params r : rows) {
      nInts +=
          r.allowed().length
              + r.masked().length
              + r.biasIds().length
              + r.seen().length
              + 2 * r.countIds().length;
      nFloats += r.biasValues().length + 3;
    }
    return new int[] {nInts, nFloats};
  }

  /**
   * {@link #pack(List, int[], IntFunction)} with room for {@code intCap} ints and {@code floatCap}
   * floats (at least {@link #listLengths}): every section then starts at an offset that depends on
   * the row count and the two capacities only, which a captured graph needs.
   */
  static Packed pack(
      List<Params> rows, int[] source, int intCap, int floatCap, IntFunction<ByteBuffer> buffer) {
    int n = rows.size();
    if (source.length != n) throw new IllegalArgumentException("one source row per row");
    int[] need = listLengths(rows);
    if (need[0] > intCap || need[1] > floatCap)
      throw new IllegalArgumentException("the rows' lists exceed the capacities");
    // the floats before the ints, so the upload ends with the ints used (the capacities' rest stays
    // on the device, unwritten)
    long uniforms = 0, ip = uniforms + 8L * n, fp = ip + 4L * ROW_INTS * n, floats = fp + 16L * n;
    long ints = floats + 4L * floatCap;
    ByteBuffer b = buffer.apply((int) (ints + 4L * need[0])).order(ByteOrder.LITTLE_ENDIAN);
    int io = 0, fo = 0;
    for (int i = 0; i < n; i++) {
      Params r = rows.get(i);
      b.putDouble((int) uniforms + 8 * i, r.uniform());
      int[] p = {
        r.topK(),
        r.logprobs(),
        io,
        fo,
        r.allowed().length,
        r.masked().length,
        r.biasIds().length,
        r.seen().length,
        r.countIds().length,
        r.greedy() ? 1 : 0,
        source[i]
      };
      for (int k = 0; k < p.length; k++) b.putInt((int) ip + 4 * (ROW_INTS * i + k), p[k]);
      b.putFloat((int) fp + 16 * i, r.temperature());
      b.putFloat((int) fp + 16 * i + 4, r.topP());
      b.putFloat((int) fp + 16 * i + 8, r.minP());
      b.putFloat((int) fp + 16 * i + 12, 0f); // padding (a reused buffer holds old bytes)
      for (int[] a :
          new int[][] {r.allowed(), r.masked(), r.biasIds(), r.seen(), r.countIds(), r.counts()})
        for (int v : a) b.putInt((int) ints + 4 * io++, v);
      for (float v : r.biasValues()) b.putFloat((int) floats + 4 * fo++, v);
      b.putFloat((int) floats + 4 * fo++, r.repetition());
      b.putFloat((int) floats + 4 * fo++, r.frequency());
      b.putFloat((int) floats + 4 * fo++, r.presence());
    }
    return new Packed(b, ip, fp, uniforms, ints, floats, ints + 4L * intCap);
  }

  /**
   * The device memory (parameters, then results) and host buffers a runner's steps reuse, grown
   * when a step needs more: no allocation, free or new direct buffer per step (cuMemFree may wait
   * for the device, and a new direct buffer costs more than the packing).
   */
  static final class Buffers implements AutoCloseable {
    private final Gpu gpu;
    private long device, deviceBytes;
    private ByteBuffer params = ByteBuffer.allocateDirect(0), results = params;

    Buffers(Gpu gpu) {
      this.gpu = gpu;
    }

    /** Device memory of at least {@code bytes} (its old contents are not kept). */
    long device(long bytes) {
      if (bytes > deviceBytes) {
        gpu.free(device);
        device = 0;
        long grown = Math.max(bytes, 2 * deviceBytes);
        device = gpu.alloc(grown);
        deviceBytes = grown;
      }
      return device;
    }

    /** The device memory's address now (it moves when it grows). */
    long address() {
      return device;
    }

    ByteBuffer params(int bytes) {
      return params = fit(params, bytes);
    }

    ByteBuffer results(int bytes) {
      return results = fit(results, bytes);
    }

    private static ByteBuffer fit(ByteBuffer b, int bytes) {
      if (b.capacity() < bytes) b = ByteBuffer.allocateDirect(Math.max(bytes, 2 * b.capacity()));
      return b.clear().limit(bytes).order(ByteOrder.LITTLE_ENDIAN);
    }

    @Override
    public void close() {
      gpu.free(device);
      device = deviceBytes = 0;
    }
  }

  /**
   * One step's rows: their parameters packed and uploaded (before the step's layers) and their
   * result slots, in a runner's {@link Buffers}, valid until its next step.
   */
  static final class Batch {
    private final Gpu gpu;
    private final Buffers buffers;
    private final List<Params> rows;
    private final Packed packed;
    private final long params, out;

    /** Row i samples logits row {@code source[i]} of the step. */
    Batch(Buffers buffers, List<Params> rows, int[] source) {
      this(buffers, rows, source, listLengths(rows));
    }

    private Batch(Buffers buffers, List<Params> rows, int[] source, int[] caps) {
      this(buffers, rows, source, caps[0], caps[1]);
    }

    /**
     * With room for {@code intCap} ints and {@code floatCap} floats in the lists' sections: the
     * same row count and capacities give the same addresses in the same buffers (a graph's).
     */
    Batch(Buffers buffers, List<Params> rows, int[] source, int intCap, int floatCap) {
      this.gpu = buffers.gpu;
      this.buffers = buffers;
      this.rows = rows;
      this.packed = pack(rows, source, intCap, floatCap, buffers::params);
      long paramBytes = (packed.capacity() + 255L) & ~255L; // results 256-byte aligned
      this.params = buffers.device(deviceBytes(paramBytes, rows.size()));
      this.out = params + paramBytes;
      gpu.upload(params, packed.bytes());
    }

    /** Parameters (256-byte aligned) and then the results of {@code n} rows. */
    static long deviceBytes(long paramBytes, int n) {
      return paramBytes + (long) n * (12 + 8 * MAX_TOP);
    }

    /**
     * Samples rows {@code s0 .. s0+n}, whose source rows lie in the logit rows {@code row0 ..} held
     * at {@code logits} ({@code [rows, vocab]} fp32), with {@code work} ({@code [n, vocab]}) as
     * scratch.
     */
    void launch(long logits, long work, int vocab, int s0, int n, int row0, int threads) {
      int all = rows.size();
      long topIds = out + 12L * all, topLp = topIds + 4L * all * MAX_TOP;
      gpu.launch(
          "sample_rows",
          n,
          1,
          threads,
          logits,
          work,
          vocab,
          params + packed.ip() + 4L * ROW_INTS * s0,
          params + packed.fp() + 16L * s0,
          params + packed.uniforms() + 8L * s0,
          params + packed.ints(),
          params + packed.floats(),
          out + 4L * s0,
          out + 4L * all + 4L * s0,
          out + 8L * all + 4L * s0,
          topIds + 4L * s0 * MAX_TOP,
          topLp + 4L * s0 * MAX_TOP,
          MAX_TOP,
          row0);
    }

    /** Waits for the launches and reads every row's result (a few bytes per row). */
    List<Result> results() {
      int n = rows.size();
      long outBytes = (long) n * (12 + 8 * MAX_TOP);
      ByteBuffer host = buffers.results((int) outBytes);
      gpu.download(out, host);
      int topIds = 12 * n, topLp = topIds + 4 * n * MAX_TOP;
      Result[] res = new Result[n];
      for (int i = 0; i < n; i++) {
        Params r = rows.get(i);
        int k = Math.max(0, r.logprobs());
        int[] ids = new int[k];
        float[] lps = new float[k];
        for (int j = 0; j < k; j++) {
          ids[j] = host.getInt(topIds + 4 * (i * MAX_TOP + j));
          lps[j] = host.getFloat(topLp + 4 * (i * MAX_TOP + j));
        }
        res[i] =
            new Result(
                host.getInt(4 * i),
                r.logprobs() < 0 ? Float.NaN : host.getFloat(4 * n + 4 * i),
                r.logprobs() < 0 ? 0 : host.getInt(8 * n + 4 * i),
                ids,
                lps);
      }
      return List.of(res);
    }
  }

  /**
   * Samples {@code rows.size()} rows, row i from logits row i at {@code logits} ({@code [rows,
   * vocab]} fp32 on the device), using {@code work} ({@code [rows, vocab]} fp32) as scratch, with
   * {@code threads} per row (a multiple of 32, at most 512; tests use fewer).
   */
  static List<Result> sample(
      Gpu gpu, long logits, long work, int vocab, List<Params> rows, int threads) {
    if (rows.isEmpty()) return List.of();
    int[] source = new int[rows.size()];
    for (int i = 0; i < source.length; i++) source[i] = i;
    try (Buffers buffers = new Buffers(gpu)) {
      Batch b = new Batch(buffers, rows, source);
      b.launch(logits, work, vocab, 0, rows.size(), 0, threads);
      return b.results();
    }
  }
}
