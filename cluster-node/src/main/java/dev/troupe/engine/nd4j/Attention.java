package dev.troupe.engine.nd4j;

/**
 * Causal grouped-query attention of each token over its sequence's cached keys and values. Keys
 * and values of the current step are already in the cache, so a prefill chunk and a decode token
 * take the same path: token at position p attends to positions 0..p through the block table.
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
      Nd4jModelRunner.Step s, float[] qkv, int stride, float[] k, float[] v, int nH, int nKv, int d, int bs) {
    int T = s.tokens.length, qDim = nH * d, kvDim = nKv * d, group = nH / nKv;
    float scale = (float) (1.0 / Math.sqrt(d));
    float[] out = new float[T * qDim];
    int maxPos = 0;
    for (int p : s.positions) maxPos = Math.max(maxPos, p);
    float[] scores = new float[maxPos + 1];
    int[] base = new int[maxPos + 1];
    for (int t = 0; t < T; t++) {
      int[] bt = s.blockTables[s.chunkOf[t]];
      int n = s.positions[t] + 1;
      // cache offset of each position 0..p of this sequence
      for (int j = 0; j < n; j++) base[j] = (bt[j / bs] * bs + j % bs) * kvDim;
      for (int h = 0; h < nH; h++) {
        int q = t * stride + h * d, g = (h / group) * d;
        float max = Float.NEGATIVE_INFINITY;
        for (int j = 0; j < n; j++) {
          float sc = Kernels.dot(qkv, q, k, base[j] + g, d) * scale;
          scores[j] = sc;
          if (sc > max) max = sc;
        }
        float sum = 0;
        for (int j = 0; j < n; j++) {
          float e = (float) Math.exp(scores[j] - max);
          scores[j] = e;
          sum += e;
        }
        float inv = 1f / sum;
        int o = t * qDim + h * d;
        for (int j = 0; j < n; j++) Kernels.axpy(scores[j] * inv, v, base[j] + g, out, o, d);
      }
    }
    return out;
  }
}
