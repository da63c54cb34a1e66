package dev.troupe.engine.cuda;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;

/**
 * Sampling on the device ({@code sample_rows}), so that a step's logits never leave the GPU: per
 * row the host sends its sampler's sparse state and one uniform number, and gets back the token,
 * its raw logprob and rank, and the top-k raw logprobs — a few bytes per row instead of a
 * vocabulary-sized row.
 *
 * <p>Semantics are the CPU {@code Sampler}'s (vLLM V1's order): raw logprobs from the unprocessed
 * row; {@code allowed_token_ids}; masked ids (the {@code bad_words} ban and the {@code min_tokens}
 * stop ids the host computes per step); {@code logit_bias} (clamped by the host); repetition
 * penalty over prompt ∪ output; frequency and presence over output counts; greedy argmax (lowest id
 * on ties) or ÷ temperature, {@code min_p}, {@code top_k} (ties at the k-th value stay), {@code
 * top_p} (a token stays when the mass strictly above it is below top_p), and an inverse-CDF draw
 * with the uniform the host drew from the choice's own seeded generator — so seeds keep their
 * per-choice meaning ({@code seed + choice index}, one uniform per random step). Differences: the
 * draw walks kept tokens in token-id order, where the CPU walks them best-first when top-k/top-p
 * sorted them (same distribution, another token for the same uniform); tokens tied exactly at the
 * top-p boundary all stay. Custom logits processors need the whole row: such rows stay on the host.
 */
public final class DeviceSampler {
  /** Rows per launch are the runner's logit pieces; at most this many top logprobs per row. */
  public static final int MAX_TOP = 20;

  static final int THREADS = 512;

  private DeviceSampler() {}

  /**
   * One row's sampling state for this step.
   *
   * @param greedy argmax (temperature below 1e-5)
   * @param temperature already raised to 0.01 when in (0, 0.01), as vLLM does
   * @param topK 0 = off
   * @param topP 1 = off
   * @param minP 0 = off
   * @param uniform this step's draw in [0, 1) from the choice's generator (unused when greedy)
   * @param logprobs -1 = none, else how many top raw logprobs to return (0 … {@link #MAX_TOP})
   * @param allowed allowed_token_ids, or empty (= all)
   * @param masked ids set to -inf (bad words' last tokens, min_tokens stop ids)
   * @param biasIds logit_bias ids (distinct)
   * @param biasValues the biases, clamped to ±100
   * @param repetition repetition penalty (1 = off), applied to {@code seen}
   * @param seen distinct ids of prompt ∪ output
   * @param frequency frequency penalty, with {@code presence} applied to {@code countIds}
   * @param countIds distinct output ids, with {@code counts} their occurrences
   */
  public record Row(
      boolean greedy,
      float temperature,
      int topK,
      float topP,
      float minP,
      double uniform,
      int logprobs,
      int[] allowed,
      int[] masked,
      int[] biasIds,
      float[] biasValues,
      float repetition,
      int[] seen,
      float frequency,
      float presence,
      int[] countIds,
      int[] counts) {
    public Row {
      if (logprobs > MAX_TOP)
        throw new IllegalArgumentException("at most " + MAX_TOP + " top logprobs on the device");
      if (biasIds.length != biasValues.length || countIds.length != counts.length)
        throw new IllegalArgumentException("ids and values differ in length");
    }

    /** Plain sampling: no masks, no bias, no penalties, no logprobs. */
    public static Row simple(
        boolean greedy, float temperature, int topK, float topP, float minP, double u) {
      int[] none = new int[0];
      return new Row(
          greedy,
          temperature,
          topK,
          topP,
          minP,
          u,
          -1,
          none,
          none,
          none,
          new float[0],
          1f,
          none,
          0f,
          0f,
          none,
          none);
    }
  }

  /** What the device chose for a row. */
  public record Result(int token, float logprob, int rank, int[] topIds, float[] topLogprobs) {}

  /** The rows' parameters packed for one upload: ip, fp, uniforms, ints, floats (bytes). */
  record Packed(ByteBuffer bytes, long ip, long fp, long uniforms, long ints, long floats) {}

  static Packed pack(List<Row> rows) {
    int n = rows.size(), nInts = 0, nFloats = 0;
    for (Row r : rows) {
      nInts +=
          r.allowed().length
              + r.masked().length
              + r.biasIds().length
              + r.seen().length
              + 2 * r.countIds().length;
      nFloats += r.biasValues().length + 3;
    }
    long uniforms = 0, ip = uniforms + 8L * n, fp = ip + 40L * n, ints = fp + 16L * n;
    long floats = ints + 4L * nInts;
    ByteBuffer b =
        ByteBuffer.allocateDirect((int) (floats + 4L * nFloats)).order(ByteOrder.LITTLE_ENDIAN);
    int io = 0, fo = 0;
    for (int i = 0; i < n; i++) {
      Row r = rows.get(i);
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
        r.greedy() ? 1 : 0
      };
      for (int k = 0; k < p.length; k++) b.putInt((int) ip + 40 * i + 4 * k, p[k]);
      b.putFloat((int) fp + 16 * i, r.temperature());
      b.putFloat((int) fp + 16 * i + 4, r.topP());
      b.putFloat((int) fp + 16 * i + 8, r.minP());
      for (int[] a :
          new int[][] {r.allowed(), r.masked(), r.biasIds(), r.seen(), r.countIds(), r.counts()})
        for (int v : a) b.putInt((int) ints + 4 * io++, v);
      for (float v : r.biasValues()) b.putFloat((int) floats + 4 * fo++, v);
      b.putFloat((int) floats + 4 * fo++, r.repetition());
      b.putFloat((int) floats + 4 * fo++, r.frequency());
      b.putFloat((int) floats + 4 * fo++, r.presence());
    }
    return new Packed(b, ip, fp, uniforms, ints, floats);
  }

  /** The rows' parameters and result slots on the device: uploaded before the step's layers. */
  static final class Batch implements AutoCloseable {
    private final Gpu gpu;
    private final List<Row> rows;
    private final Packed packed;
    private final long params, out;

    Batch(Gpu gpu, List<Row> rows) {
      this.gpu = gpu;
      this.rows = rows;
      this.packed = pack(rows);
      this.params = gpu.alloc(packed.bytes().capacity());
      long o;
      try {
        gpu.upload(params, packed.bytes());
        o = gpu.alloc((long) rows.size() * (12 + 8 * MAX_TOP));
      } catch (RuntimeException e) {
        gpu.free(params);
        throw e;
      }
      this.out = o;
    }

    /**
     * Samples rows {@code r0 .. r0+n} whose raw logits are at {@code logits} ({@code [n, vocab]}).
     */
    void launch(long logits, long work, int vocab, int r0, int n, int threads) {
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
          params + packed.ip() + 40L * r0,
          params + packed.fp() + 16L * r0,
          params + packed.uniforms() + 8L * r0,
          params + packed.ints(),
          params + packed.floats(),
          out + 4L * r0,
          out + 4L * all + 4L * r0,
          out + 8L * all + 4L * r0,
          topIds + 4L * r0 * MAX_TOP,
          topLp + 4L * r0 * MAX_TOP,
          MAX_TOP);
    }

    /** Waits for the launches and reads every row's result (a few bytes per row). */
    List<Result> results() {
      int n = rows.size();
      long outBytes = (long) n * (12 + 8 * MAX_TOP);
      ByteBuffer host = ByteBuffer.allocateDirect((int) outBytes).order(ByteOrder.LITTLE_ENDIAN);
      gpu.download(out, host);
      int topIds = 12 * n, topLp = topIds + 4 * n * MAX_TOP;
      Result[] res = new Result[n];
      for (int i = 0; i < n; i++) {
        Row r = rows.get(i);
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

    @Override
    public void close() {
      gpu.free(params);
      gpu.free(out);
    }
  }

  /**
   * Samples {@code rows.size()} rows whose raw logits are at {@code logits} ({@code [rows, vocab]}
   * fp32 on the device), using {@code work} ({@code [rows, vocab]} fp32) as scratch.
   */
  static List<Result> sample(Gpu gpu, long logits, long work, int vocab, List<Row> rows) {
    return sample(gpu, logits, work, vocab, rows, THREADS);
  }

  /** As above with {@code threads} per row (a multiple of 32, at most 512; tests use fewer). */
  static List<Result> sample(
      Gpu gpu, long logits, long work, int vocab, List<Row> rows, int threads) {
    if (rows.isEmpty()) return List.of();
    try (Batch b = new Batch(gpu, rows)) {
      b.launch(logits, work, vocab, 0, rows.size(), threads);
      return b.results();
    }
  }
}
