package dev.troupe.engine.cpu;

/**
 * Causal grouped-query attention of each token over its sequence's cached keys and values (the
 * current step's are already in the cache, so prefill and decode take the same inputs: the token at
 * position p attends to positions {@code 0..p}, or the last {@code window} of them).
 *
 * <p>Decode tokens and short chunks: one work item per (token, KV head), split across the team by
 * cost (positions × heads); each item streams its keys once for all query heads of the group
 * (Vector API dot products and {@code exp}). Prefill chunks of {@link #BLAS_MIN_ROWS} or more
 * tokens: two GEMMs per head ({@code S = Q Kᵀ / √d}, causal softmax, {@code O = P V}) on OpenBLAS,
 * by member 0. Outputs are written in the o-projection's input layout.
 */
final class Attention {
  /** Below this many query rows a chunk is attended token by token. */
  static final int BLAS_MIN_ROWS = 8;

  private final int nH, nKv, d, bs, window, qDim, kvDim, group;
  private final float scale;

  Attention(int nH, int nKv, int d, int bs, int window) {
    this.nH = nH;
    this.nKv = nKv;
    this.d = d;
    this.bs = bs;
    this.window = window;
    this.qDim = nH * d;
    this.kvDim = nKv * d;
    this.group = nH / nKv;
    this.scale = (float) (1.0 / Math.sqrt(d));
  }

  /** The step's work: per-token items (token·nKv + group) with cumulative cost, BLAS chunks. */
  static final class Plan {
    int[] items;
    long[] cumCost; // cumCost[i] = cost of items [0, i]
    int[] blasChunks;
    int maxPositions;
  }

  Plan plan(Step s) {
    Plan p = new Plan();
    int T = s.tokens.length, nChunks = s.chunkStart.length;
    int[] items = new int[T * nKv];
    long[] cum = new long[T * nKv];
    int[] blas = new int[nChunks];
    int ni = 0, nb = 0;
    long total = 0;
    for (int ci = 0; ci < nChunks; ci++) {
      int from = s.chunkStart[ci], to = ci + 1 < nChunks ? s.chunkStart[ci + 1] : T;
      if (to - from >= BLAS_MIN_ROWS) {
        blas[nb++] = ci;
        continue;
      }
      for (int t = from; t < to; t++) {
        int n = s.positions[t] + 1;
        p.maxPositions = Math.max(p.maxPositions, n);
        int visible = window > 0 ? Math.min(n, window) : n;
        for (int g = 0; g < nKv; g++) {
          total += (long) visible * group + 16;
          items[ni] = t * nKv + g;
          cum[ni++] = total;
        }
      }
    }
    p.items = java.util.Arrays.copyOf(items, ni);
    p.cumCost = java.util.Arrays.copyOf(cum, ni);
    p.blasChunks = java.util.Arrays.copyOf(blas, nb);
    return p;
  }

  /** Scratch of one member: scores [group, positions], key offsets, one head's output. */
  static final class Scratch {
    float[] scores = new float[0];
    int[] base = new int[0];
    float[] head = new float[0];

    void ensure(int group, int n, int d) {
      if (scores.length < group * n) scores = new float[group * n];
      if (base.length < n) base = new int[n];
      if (head.length < group * d) head = new float[group * d];
    }
  }

  /** Member {@code m} of {@code members}: its share of the per-token items. */
  void perToken(
      int m,
      int members,
      Plan p,
      Step s,
      float[] qkv,
      int stride,
      float[] k,
      float[] v,
      float[] out,
      int outStride,
      boolean packed,
      Scratch sc) {
    int n = p.items.length;
    if (n == 0) return;
    long total = p.cumCost[n - 1];
    long lo = total * m / members, hi = total * (m + 1) / members;
    int i = firstAbove(p.cumCost, lo), end = m == members - 1 ? n : firstAbove(p.cumCost, hi);
    sc.ensure(group, p.maxPositions, d);
    for (; i < end; i++)
      item(p.items[i] / nKv, p.items[i] % nKv, s, qkv, stride, k, v, out, outStride, packed, sc);
  }

  /** First index whose cumulative cost is above {@code c}. */
  private static int firstAbove(long[] cum, long c) {
    int a = 0, b = cum.length;
    while (a < b) {
      int mid = (a + b) >>> 1;
      if (cum[mid] <= c) a = mid + 1;
      else b = mid;
    }
    return a;
  }

  private void item(
      int t,
      int g,
      Step s,
      float[] qkv,
      int stride,
      float[] k,
      float[] v,
      float[] out,
      int outStride,
      boolean packed,
      Scratch sc) {
    int[] bt = s.blockTables[s.chunkOf[t]];
    int n = s.positions[t] + 1;
    int lo = window > 0 ? Math.max(0, n - window) : 0;
    int len = n - lo;
    int[] base = sc.base;
    float[] scores = sc.scores, head = sc.head;
    for (int j = lo; j < n; j++) base[j - lo] = (bt[j / bs] * bs + j % bs) * kvDim + g * d;
    int q0 = t * stride + g * group * d;
    // scores[hh, j] = q_h · k_j / √d, keys streamed once for the group's heads
    for (int j = 0; j < len; j++)
      for (int hh = 0; hh < group; hh++)
        scores[hh * len + j] = Kernels.dot(qkv, q0 + hh * d, k, base[j], d) * scale;
    java.util.Arrays.fill(head, 0, group * d, 0f);
    for (int hh = 0; hh < group; hh++) {
      int r = hh * len;
      float max = Float.NEGATIVE_INFINITY;
      for (int j = 0; j < len; j++) max = Math.max(max, scores[r + j]);
      float inv = 1f / Kernels.expShift(scores, r, r + len, max);
      for (int j = 0; j < len; j++) Kernels.axpy(scores[r + j] * inv, v, base[j], head, hh * d, d);
    }
    write(head, group * d, t, g * group * d, out, outStride, packed);
  }

  /** {@code src[0..n)} into row t of {@code out} from element {@code e0}, in its layout. */
  private void write(
      float[] src, int n, int t, int e0, float[] out, int outStride, boolean packed) {
    int row = t * outStride;
    if (!packed) System.arraycopy(src, 0, out, row + e0, n);
    else for (int i = 0; i < n; i++) out[row + Activations.index(e0 + i, qDim, true)] = src[i];
  }

  /**
   * Member 0: the step's prefill chunks as GEMMs; {@code kg, vg, qh, p, oh} are grown as needed in
   * {@code buf}.
   */
  void chunks(
      Plan p,
      Step s,
      float[] qkv,
      int stride,
      float[] k,
      float[] v,
      float[] out,
      int outStride,
      boolean packed,
      Blas blas,
      ChunkBuffers buf) {
    for (int ci : p.blasChunks) {
      int T = s.tokens.length;
      int t0 = s.chunkStart[ci],
          nq = (ci + 1 < s.chunkStart.length ? s.chunkStart[ci + 1] : T) - t0;
      int start = s.positions[t0], n = start + nq;
      int[] bt = s.blockTables[ci];
      buf.ensure(n, nq, d);
      for (int g = 0; g < nKv; g++) {
        // K_g, V_g [n, d]
        for (int j = 0; j < n; j++) {
          int src = (bt[j / bs] * bs + j % bs) * kvDim + g * d;
          System.arraycopy(k, src, buf.kg, j * d, d);
          System.arraycopy(v, src, buf.vg, j * d, d);
        }
        for (int h = g * group; h < (g + 1) * group; h++) {
          for (int i = 0; i < nq; i++)
            System.arraycopy(qkv, (t0 + i) * stride + h * d, buf.qh, i * d, d);
          blas.gemm(buf.qh, buf.kg, buf.p, nq, n, d, true, scale);
          // causal softmax: query i sees positions first .. start + i
          for (int i = 0; i < nq; i++) {
            int row = i * n, last = start + i;
            int first = window > 0 ? Math.max(0, last + 1 - window) : 0;
            float max = Float.NEGATIVE_INFINITY;
            for (int j = first; j <= last; j++) max = Math.max(max, buf.p[row + j]);
            float inv = 1f / Kernels.expShift(buf.p, row + first, row + last + 1, max);
            java.util.Arrays.fill(buf.p, row, row + first, 0f);
            for (int j = first; j <= last; j++) buf.p[row + j] *= inv;
            java.util.Arrays.fill(buf.p, row + last + 1, row + n, 0f);
          }
          blas.gemm(buf.p, buf.vg, buf.oh, nq, d, n, false, 1f);
          for (int i = 0; i < nq; i++) {
            System.arraycopy(buf.oh, i * d, buf.row, 0, d);
            write(buf.row, d, t0 + i, h * d, out, outStride, packed);
          }
        }
      }
    }
  }

  /** Reused arrays of {@link #chunks}. */
  static final class ChunkBuffers {
    float[] kg = new float[0], vg = new float[0], qh = new float[0], p = new float[0];
    float[] oh = new float[0], row = new float[0];

    void ensure(int n, int nq, int d) {
      if (kg.length < n * d) {
        kg = new float[n * d];
        vg = new float[n * d];
      }
      if (qh.length < nq * d) {
        qh = new float[nq * d];
        oh = new float[nq * d];
      }
      if (p.length < nq * n) p = new float[nq * n];
      if (row.length < d) row = new float[d];
    }
  }
}
