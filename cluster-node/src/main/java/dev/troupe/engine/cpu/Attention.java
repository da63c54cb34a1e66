package dev.troupe.engine.cpu;

import static org.bytedeco.openblas.global.openblas.CblasNoTrans;
import static org.bytedeco.openblas.global.openblas.CblasRowMajor;
import static org.bytedeco.openblas.global.openblas.CblasTrans;
import static org.bytedeco.openblas.global.openblas.cblas_sgemm;

import java.util.ArrayList;
import java.util.List;
import org.bytedeco.javacpp.FloatPointer;

/**
 * Causal grouped-query attention of each token over its sequence's cached keys and values. Keys and
 * values of the current step are already in the cache, so a prefill chunk and a decode token take
 * the same path: token at position p attends to positions 0..p through the block table.
 */
final class Attention {
  private Attention() {}

  /**
   * @param qkv per token [q (nH·d) | k | v], row stride {@code stride}; q already rotated
   * @param k key cache [slots, nKv, d]
   * @param v value cache [slots, nKv, d]
   * @return [T, nH·d]
   */
  static float[] run(
      CpuModelRunner.Step s,
      float[] qkv,
      int stride,
      float[] k,
      float[] v,
      int nH,
      int nKv,
      int d,
      int bs,
      int window,
      Linear.Scratch scratch) {
    int T = s.tokens.length;
    float[] out = new float[T * nH * d];
    int maxPos = 0;
    long work = 0; // multiply-adds of the per-token path
    List<Integer> perToken = new ArrayList<>();
    for (int ci = 0; ci < s.chunkStart.length; ci++) {
      int from = s.chunkStart[ci], to = ci + 1 < s.chunkStart.length ? s.chunkStart[ci + 1] : T;
      if (to - from >= BLAS_MIN_ROWS) {
        chunkBlas(s, ci, from, to - from, qkv, stride, k, v, nH, nKv, d, bs, window, out, scratch);
        continue;
      }
      for (int t = from; t < to; t++) {
        perToken.add(t);
        maxPos = Math.max(maxPos, s.positions[t]);
        work += 2L * (s.positions[t] + 1) * nH * d;
      }
    }
    int n = maxPos + 1;
    if (work < parallelMinWork || perToken.size() < 2) {
      float[] scores = new float[n];
      int[] base = new int[n];
      for (int t : perToken)
        token(s, t, qkv, stride, k, v, nH, nKv, d, bs, window, out, scores, base);
    } else {
      // decode batches with long contexts: tokens are independent, spread them over the cores
      perToken.parallelStream()
          .forEach(
              t ->
                  token(
                      s,
                      t,
                      qkv,
                      stride,
                      k,
                      v,
                      nH,
                      nKv,
                      d,
                      bs,
                      window,
                      out,
                      new float[n],
                      new int[n]));
    }
    return out;
  }

  /**
   * Per-token attention work (multiply-adds) above which tokens run in parallel; tests lower it.
   */
  static long parallelMinWork = 1 << 20;

  /** Below this many query rows a chunk is attended token by token in Java. */
  static final int BLAS_MIN_ROWS = 8;

  /** One token's attention, plain Java: decode tokens and short chunks. */
  private static void token(
      CpuModelRunner.Step s,
      int t,
      float[] qkv,
      int stride,
      float[] k,
      float[] v,
      int nH,
      int nKv,
      int d,
      int bs,
      int window,
      float[] out,
      float[] scores,
      int[] base) {
    int qDim = nH * d, kvDim = nKv * d, group = nH / nKv;
    float scale = (float) (1.0 / Math.sqrt(d));
    int[] bt = s.blockTables[s.chunkOf[t]];
    int n = s.positions[t] + 1;
    int lo = window > 0 ? Math.max(0, n - window) : 0; // first visible position
    // cache offset of each position lo..p of this sequence
    for (int j = lo; j < n; j++) base[j] = (bt[j / bs] * bs + j % bs) * kvDim;
    for (int h = 0; h < nH; h++) {
      int q = t * stride + h * d, g = (h / group) * d;
      float max = Float.NEGATIVE_INFINITY;
      for (int j = lo; j < n; j++) {
        float sc = Kernels.dot(qkv, q, k, base[j] + g, d) * scale;
        scores[j] = sc;
        if (sc > max) max = sc;
      }
      float sum = 0;
      for (int j = lo; j < n; j++) {
        float e = (float) Math.exp(scores[j] - max);
        scores[j] = e;
        sum += e;
      }
      float inv = 1f / sum;
      int o = t * qDim + h * d;
      for (int j = lo; j < n; j++) Kernels.axpy(scores[j] * inv, v, base[j] + g, out, o, d);
    }
  }

  /**
   * A prefill chunk of {@code nq} queries at positions {@code start ..} against its {@code n =
   * start + nq} cached positions, as two GEMMs per head: {@code S = Q Kᵀ / √d [nq, n]}, causal
   * softmax, {@code O = P V [nq, d]}; keys and values of a KV head are gathered once from the
   * blocks.
   */
  private static void chunkBlas(
      CpuModelRunner.Step s,
      int ci,
      int t0,
      int nq,
      float[] qkv,
      int stride,
      float[] k,
      float[] v,
      int nH,
      int nKv,
      int d,
      int bs,
      int window,
      float[] out,
      Linear.Scratch scratch) {
    int start = s.positions[t0], n = start + nq, qDim = nH * d, kvDim = nKv * d, group = nH / nKv;
    float scale = (float) (1.0 / Math.sqrt(d));
    int[] bt = s.blockTables[ci];
    float[] kg = new float[n * d],
        vg = new float[n * d],
        qh = new float[nq * d],
        p = new float[nq * n];
    float[] oh = new float[nq * d];
    FloatPointer kp = scratch.buf(2, (long) n * d), vp = scratch.buf(3, (long) n * d);
    FloatPointer qp = scratch.buf(4, (long) nq * d), sp = scratch.buf(5, (long) nq * n);
    FloatPointer op = scratch.buf(6, (long) nq * d);
    for (int g = 0; g < nKv; g++) {
      // K_g, V_g [n, d]
      for (int j = 0; j < n; j++) {
        int src = (bt[j / bs] * bs + j % bs) * kvDim + g * d;
        System.arraycopy(k, src, kg, j * d, d);
        System.arraycopy(v, src, vg, j * d, d);
      }
      kp.position(0).put(kg, 0, n * d);
      vp.position(0).put(vg, 0, n * d);
      for (int h = g * group; h < (g + 1) * group; h++) {
        // Q_h [nq, d]
        for (int i = 0; i < nq; i++) System.arraycopy(qkv, (t0 + i) * stride + h * d, qh, i * d, d);
        qp.position(0).put(qh, 0, nq * d);
        cblas_sgemm(
            CblasRowMajor, CblasNoTrans, CblasTrans, nq, n, d, scale, qp, d, kp, d, 0f, sp, n);
        sp.position(0).get(p, 0, nq * n);
        // causal softmax: query i sees positions first .. start + i (first > 0 with a sliding
        // window)
        for (int i = 0; i < nq; i++) {
          int row = i * n,
              last = start + i,
              first = window > 0 ? Math.max(0, last + 1 - window) : 0;
          float max = Float.NEGATIVE_INFINITY;
          for (int j = first; j <= last; j++) max = Math.max(max, p[row + j]);
          float sum = 0;
          for (int j = first; j <= last; j++)
            sum += p[row + j] = (float) Math.exp(p[row + j] - max);
          float inv = 1f / sum;
          for (int j = 0; j < first; j++) p[row + j] = 0f;
          for (int j = first; j <= last; j++) p[row + j] *= inv;
          for (int j = last + 1; j < n; j++) p[row + j] = 0f;
        }
        sp.position(0).put(p, 0, nq * n);
        cblas_sgemm(
            CblasRowMajor, CblasNoTrans, CblasNoTrans, nq, d, n, 1f, sp, n, vp, d, 0f, op, d);
        op.position(0).get(oh, 0, nq * d);
        for (int i = 0; i < nq; i++) System.arraycopy(oh, i * d, out, (t0 + i) * qDim + h * d, d);
      }
    }
  }
}
