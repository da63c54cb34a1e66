package dev.troupe.engine.cpu;

/**
 * Causal grouped-query attention of each token over its sequence's cached keys and values (the
 * current step's are already in the cache, so prefill and decode take the same inputs: the token at
 * position p attends to positions {@code 0..p}, or the last {@code window} of them).
 *
 * <p>The cache ({@link #store}): a block of {@code bs} positions is contiguous in each of the two
 * arrays, KV head by KV head; its keys transposed ({@code [d][bs]}: one vector holds one key
 * element of several positions), its values as rows ({@code [bs][d]}).
 *
 * <p>Decode tokens and short chunks: one work item per (token, KV head), split across the team by
 * cost (positions × heads); each item scores whole blocks for each query head of its group ({@link
 * AttentionVec#scores}: multiply-adds with the query element broadcast, no horizontal sums), takes
 * the softmax of the visible positions and sums their value rows ({@link AttentionVec#values}).
 * Against dot products over position-major keys, this halved a decode layer's attention ({@code
 * AttentionBench}, docs/benchmarks.md). Prefill chunks of {@link #BLAS_MIN_ROWS} or more prompt
 * tokens (a moved request's re-prefilled generated tokens stay token by token, as their decode
 * steps were: {@link Step#generatedRows}): two GEMMs per head ({@code S = Q Kᵀ / √d}, causal
 * softmax, {@code O = P V}) on OpenBLAS, by member 0. Outputs are written in the o-projection's
 * input layout: rows below {@code packedRows} packed ({@link Activations}), the others natural.
 */
final class Attention {
  /** Below this many query rows a chunk is attended token by token. */
  static final int BLAS_MIN_ROWS = 8;

  /** Queries per unit of a prefill chunk's attention ({@link #chunk}). */
  static final int QUERY_BLOCK = 128;

  private final int nH, nKv, d, bs, window, qDim, kvDim, group;
  private final float scale;

  /**
   * Decode items run on {@link AttentionVec}: the Vector API is on and a block is whole vectors.
   */
  private final boolean vectorBlocks;

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
    this.vectorBlocks = VectorSupport.AVAILABLE && bs % AttentionVec.lanes() == 0;
  }

  /**
   * Writes one position's key and value (rows of {@code kvDim}, after RoPE) into cache slot {@code
   * slot} (= block · bs + position in block). A block holds {@code bs · kvDim} floats of each
   * cache, KV head by KV head: its keys transposed, {@code [nKv][d][bs]}, its values {@code
   * [nKv][bs][d]} (see {@link AttentionVec}). Blocks stay contiguous, so a block copies as one
   * range.
   */
  void store(float[] src, int keyAt, int valueAt, float[] k, float[] v, int slot) {
    int block = slot / bs, p = slot % bs, base = block * bs * kvDim;
    for (int g = 0; g < nKv; g++) {
      int keys = base + g * d * bs + p, e0 = g * d;
      for (int i = 0; i < d; i++) k[keys + i * bs] = src[keyAt + e0 + i];
      System.arraycopy(src, valueAt + e0, v, base + (g * bs + p) * d, d);
    }
  }

  /** The step's work: per-token items (token·nKv + group) with cumulative cost, BLAS chunks. */
  static final class Plan {
    int[] items;
    long[] cumCost; // cumCost[i] = cost of items [0, i]
    int[] blasChunks;
    int[] unitStart; // chunk k's units are [unitStart[k], unitStart[k + 1])
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
      // generated tokens' pieces (a moved request's re-prefill) token by token, as their decode
      // steps attended: the BLAS GEMMs' sums differ in the last bits
      if (to - from >= BLAS_MIN_ROWS && from >= s.generatedRows) {
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
    p.unitStart = new int[nb + 1];
    for (int k = 0; k < nb; k++) {
      int ci = blas[k], from = s.chunkStart[ci], to = ci + 1 < nChunks ? s.chunkStart[ci + 1] : T;
      p.unitStart[k + 1] = p.unitStart[k] + nKv * ((to - from + QUERY_BLOCK - 1) / QUERY_BLOCK);
    }
    return p;
  }

  /** Scratch of one member: scores [group, positions of whole blocks], value rows, the output. */
  static final class Scratch {
    float[] scores = new float[0];
    int[] rows = new int[0]; // where each visible position's value row starts
    float[] head = new float[0];

    void ensure(int group, int n, int d) {
      if (scores.length < group * n) scores = new float[group * n];
      if (rows.length < n) rows = new int[n];
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
      int packedRows,
      Scratch sc) {
    int n = p.items.length;
    if (n == 0) return;
    long total = p.cumCost[n - 1];
    long lo = total * m / members, hi = total * (m + 1) / members;
    int i = firstAbove(p.cumCost, lo), end = m == members - 1 ? n : firstAbove(p.cumCost, hi);
    sc.ensure(group, p.maxPositions + 2 * bs, d); // whole blocks around the visible ones
    for (; i < end; i++)
      item(
          p.items[i] / nKv, p.items[i] % nKv, s, qkv, stride, k, v, out, outStride, packedRows, sc);
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
      int packedRows,
      Scratch sc) {
    int[] bt = s.blockTables[s.chunkOf[t]];
    int n = s.positions[t] + 1;
    int lo = window > 0 ? Math.max(0, n - window) : 0;
    // whole blocks b0..b1 are scored; positions [first, last) of them are visible
    int b0 = lo / bs, b1 = (n - 1) / bs, span = (b1 - b0 + 1) * bs;
    int first = lo - b0 * bs, last = n - b0 * bs;
    float[] scores = sc.scores, head = sc.head;
    int[] rows = sc.rows;
    for (int b = b0, j = 0; b <= b1; b++) {
      int from = Math.max(lo, b * bs), to = Math.min(n, (b + 1) * bs);
      int row0 = bt[b] * bs * kvDim + (g * bs - b * bs) * d;
      for (int pos = from; pos < to; pos++) rows[j++] = row0 + pos * d;
    }
    int q0 = t * stride + g * group * d;
    for (int hh = 0; hh < group; hh++) {
      int row = hh * span, q = q0 + hh * d;
      for (int b = b0; b <= b1; b++) {
        int keys = bt[b] * bs * kvDim + g * d * bs, at = row + (b - b0) * bs;
        if (vectorBlocks) AttentionVec.scores(qkv, q, k, keys, d, bs, scale, scores, at);
        else scoresScalar(qkv, q, k, keys, scores, at);
      }
      float max = Float.NEGATIVE_INFINITY;
      for (int j = row + first; j < row + last; j++) max = Math.max(max, scores[j]);
      float inv = 1f / Kernels.expShift(scores, row + first, row + last, max);
      if (vectorBlocks)
        AttentionVec.values(scores, row + first, last - first, v, rows, d, inv, head, hh * d);
      else valuesScalar(scores, row + first, last - first, v, rows, inv, head, hh * d);
    }
    write(head, group * d, t, g * group * d, out, outStride, t < packedRows);
  }

  /** {@code bs} scores of query {@code q} against the keys of one block (transposed layout). */
  private void scoresScalar(float[] qkv, int q, float[] k, int keys, float[] scores, int at) {
    for (int p = 0; p < bs; p++) {
      float sum = 0;
      for (int i = 0; i < d; i++) sum += qkv[q + i] * k[keys + i * bs + p];
      scores[at + p] = sum * scale;
    }
  }

  /** {@code head[h0 + i] = inv · Σ_j p[at + j] v[rows[j] + i]} over {@code n} positions. */
  private void valuesScalar(
      float[] p, int at, int n, float[] v, int[] rows, float inv, float[] head, int h0) {
    java.util.Arrays.fill(head, h0, h0 + d, 0f);
    for (int j = 0; j < n; j++) {
      float w = p[at + j];
      for (int i = 0; i < d; i++) head[h0 + i] += w * v[rows[j] + i];
    }
    for (int i = 0; i < d; i++) head[h0 + i] *= inv;
  }

  /** {@code src[0..n)} into row t of {@code out} from element {@code e0}, in its layout. */
  private void write(
      float[] src, int n, int t, int e0, float[] out, int outStride, boolean packed) {
    int row = t * outStride;
    if (!packed) System.arraycopy(src, 0, out, row + e0, n);
    else for (int i = 0; i < n; i++) out[row + Activations.index(e0 + i, qDim, true)] = src[i];
  }

  /** Units of {@link #chunk} in a plan: one per prefill chunk, block of queries and KV head. */
  int chunkUnits(Plan p) {
    return p.unitStart[p.blasChunks.length];
  }

  /**
   * Unit {@code u} of the step's prefill chunks as GEMMs: one block of {@link #QUERY_BLOCK} queries
   * of a chunk, the heads of one KV head stacked, against the keys the block's last query sees (a
   * causal chunk skips the keys none of a block's queries sees: 256 queries in two blocks do 3/4 of
   * the whole square's work). Later blocks first, as they cost more. {@code kg, vg, qh, p, oh} are
   * grown as needed in {@code buf}. Units write disjoint rows and heads, so members run them at
   * once, each with its own {@code blas} and {@code buf}; a query's result depends only on its
   * chunk (its block's bounds and the keys), never on the rest of the step.
   */
  void chunk(
      Plan p,
      int u,
      Step s,
      float[] qkv,
      int stride,
      float[] k,
      float[] v,
      float[] out,
      int outStride,
      int packedRows,
      Blas blas,
      ChunkBuffers buf) {
    int c = 0;
    while (u >= p.unitStart[c + 1]) c++;
    int ci = p.blasChunks[c], r = u - p.unitStart[c], g = r % nKv;
    int blocks = (p.unitStart[c + 1] - p.unitStart[c]) / nKv, qb = blocks - 1 - r / nKv;
    int T = s.tokens.length, c0 = s.chunkStart[ci];
    int c1 = ci + 1 < s.chunkStart.length ? s.chunkStart[ci + 1] : T;
    int t0 = c0 + qb * QUERY_BLOCK, nq = Math.min(QUERY_BLOCK, c1 - t0);
    int start = s.positions[t0], n = start + nq, rows = group * nq;
    int[] bt = s.blockTables[ci];
    buf.ensure(n, rows, d);
    // K_gᵀ [d, n] and V_g [n, d] from the chunk's blocks
    for (int b = 0, nb = (n + bs - 1) / bs; b < nb; b++) {
      int count = Math.min(bs, n - b * bs), base = bt[b] * bs * kvDim;
      for (int i = 0; i < d; i++)
        System.arraycopy(k, base + (g * d + i) * bs, buf.kg, i * n + b * bs, count);
      System.arraycopy(v, base + g * bs * d, buf.vg, b * bs * d, count * d);
    }
    // the group's heads' queries stacked: row j·nq + i is head g·group + j, query t0 + i
    for (int j = 0; j < group; j++)
      for (int i = 0; i < nq; i++)
        System.arraycopy(qkv, (t0 + i) * stride + (g * group + j) * d, buf.qh, (j * nq + i) * d, d);
    blas.gemm(buf.qh, buf.kg, buf.p, rows, n, d, false, scale);
    // causal softmax: query i sees positions first .. start + i
    for (int row = 0; row < rows; row++) {
      int at = row * n, last = start + row % nq;
      int first = window > 0 ? Math.max(0, last + 1 - window) : 0;
      float max = Float.NEGATIVE_INFINITY;
      for (int j = first; j <= last; j++) max = Math.max(max, buf.p[at + j]);
      float inv = 1f / Kernels.expShift(buf.p, at + first, at + last + 1, max);
      java.util.Arrays.fill(buf.p, at, at + first, 0f);
      for (int j = first; j <= last; j++) buf.p[at + j] *= inv;
      java.util.Arrays.fill(buf.p, at + last + 1, at + n, 0f);
    }
    blas.gemm(buf.p, buf.vg, buf.oh, rows, d, n, false, 1f);
    for (int j = 0; j < group; j++)
      for (int i = 0; i < nq; i++) {
        System.arraycopy(buf.oh, (j * nq + i) * d, buf.row, 0, d);
        write(buf.row, d, t0 + i, (g * group + j) * d, out, outStride, t0 + i < packedRows);
      }
  }

  /** Reused arrays of {@link #chunk}. */
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
