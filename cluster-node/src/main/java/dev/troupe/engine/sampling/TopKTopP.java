package dev.troupe.engine.sampling;

/**
 * {@code top_k} and {@code top_p} on one processed row, as a threshold: the smallest logit that
 * stays. Every token at or above it stays, so ties at the boundary stay for both (vLLM keeps ties
 * at the k-th value; at the top-p boundary its sort breaks ties arbitrarily — here they all stay,
 * as on the device, so the kept set never depends on an order among equal logits).
 *
 * <p>top_p alone is computed without sorting the vocabulary: tokens are binned by logit ({@value
 * #BINS} bins over the top {@value #RANGE} units), bins are summed from the top until the mass
 * reaches top_p, and only the boundary bin is sorted.
 */
final class TopKTopP {
  static final int BINS = 2048;
  private static final double RANGE = 40.0;

  private TopKTopP() {}

  /**
   * The smallest logit of {@code x[0 .. vocab)} that {@code top_k} (0 = off) and then {@code top_p}
   * (1 = off) keep; {@code max} is the row's largest logit (finite). Uses the workspace's index
   * arrays.
   */
  static float threshold(
      float[] x, int vocab, int topK, double topP, float max, SamplerFactory.Workspace ws) {
    int[] idx = ws.idx;
    int count = -1; // -1: every finite entry is a candidate; else idx[0..count), best first
    if (topK > 0) {
      int k = Logprobs.topK(x, 0, vocab, topK, idx);
      float kth = x[idx[k - 1]];
      count = 0;
      for (int i = 0; i < vocab; i++)
        if (x[i] >= kth && x[i] != Float.NEGATIVE_INFINITY) idx[count++] = i;
      Logprobs.sortDescending(x, idx, count, ws.keys);
    }
    if (topP < 1.0)
      count = count >= 0 ? cutSorted(x, idx, count, topP) : cutDense(x, vocab, idx, max, topP, ws);
    if (count < 0) return Float.NEGATIVE_INFINITY;
    float t = Float.POSITIVE_INFINITY;
    for (int j = 0; j < count; j++) t = Math.min(t, x[idx[j]]);
    return t;
  }

  /** Keeps the prefix of idx[0..count) (best first) where the mass ranked above is below top_p. */
  private static int cutSorted(float[] x, int[] idx, int count, double topP) {
    float top = x[idx[0]];
    double z = 0;
    for (int j = 0; j < count; j++) z += Math.exp((double) x[idx[j]] - top);
    double before = 0;
    for (int j = 0; j < count; j++) {
      if (before >= topP) return Math.max(j, 1);
      before += Math.exp((double) x[idx[j]] - top) / z;
    }
    return count;
  }

  /**
   * top_p over the whole row without sorting it. Leaves the kept tokens in idx (higher bins
   * unordered, then the boundary bin best first) and returns how many.
   */
  private static int cutDense(
      float[] x, int vocab, int[] idx, float max, double topP, SamplerFactory.Workspace ws) {
    float min = max;
    for (int i = 0; i < vocab; i++) if (x[i] < min && x[i] != Float.NEGATIVE_INFINITY) min = x[i];
    double range = Math.min((double) max - min, RANGE);
    double[] mass = ws.binMass;
    java.util.Arrays.fill(mass, 0);
    double binsPerUnit = range > 0 ? (BINS - 1) / range : 0;
    double z = 0;
    for (int i = 0; i < vocab; i++) {
      if (x[i] == Float.NEGATIVE_INFINITY) continue;
      double w = Math.exp((double) x[i] - max);
      z += w;
      mass[bin(x[i], max, binsPerUnit)] += w;
    }
    double target = topP * z;
    double above = 0;
    int boundary = BINS - 1;
    for (int b = 0; b < BINS; b++) {
      if (above + mass[b] >= target) {
        boundary = b;
        break;
      }
      above += mass[b];
    }
    int kept = 0;
    for (int i = 0; i < vocab; i++)
      if (x[i] != Float.NEGATIVE_INFINITY && bin(x[i], max, binsPerUnit) < boundary)
        idx[kept++] = i;
    int start = kept;
    for (int i = 0; i < vocab; i++)
      if (x[i] != Float.NEGATIVE_INFINITY && bin(x[i], max, binsPerUnit) == boundary)
        idx[kept++] = i;
    int inBin = kept - start;
    int[] bucket = ws.bucket;
    System.arraycopy(idx, start, bucket, 0, inBin);
    Logprobs.sortDescending(x, bucket, inBin, ws.keys);
    double before = above / z;
    int j = 0;
    while (j < inBin && (before < topP || start + j == 0)) {
      before += Math.exp((double) x[bucket[j]] - max) / z;
      idx[start + j] = bucket[j];
      j++;
    }
    return start + j;
  }

  /** Bin 0 holds the largest logits; everything more than RANGE below the max is last. */
  private static int bin(float logit, float max, double binsPerUnit) {
    double d = ((double) max - logit) * binsPerUnit;
    return d >= BINS - 1 ? BINS - 1 : (int) d;
  }
}
