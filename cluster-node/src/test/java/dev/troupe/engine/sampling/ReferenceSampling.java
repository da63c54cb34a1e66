package dev.troupe.engine.sampling;

import dev.troupe.protocol.cluster.SamplingParams;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * An independent, deliberately naive transcription of vLLM V1's sampler for one row: float32
 * arithmetic on a full copy, full sorts, softmax in probability space, top-p via an ascending
 * cumulative sum exactly as {@code apply_top_k_top_p} does. Written from the reference notes, not
 * from the production code.
 */
final class ReferenceSampling {
  private ReferenceSampling() {}

  /** Final sampling distribution (one-hot for greedy). */
  static double[] probabilities(
      SamplingParams p,
      int[] prompt,
      int[] output,
      float[] logits,
      Set<Integer> minTokensStopIds,
      List<int[]> badWordSequences) {
    int v = logits.length;
    float[] x = logits.clone();
    if (p.allowedTokenIds() != null) {
      Set<Integer> ok = new HashSet<>(p.allowedTokenIds());
      for (int i = 0; i < v; i++) if (!ok.contains(i)) x[i] = Float.NEGATIVE_INFINITY;
    }
    for (int[] w : badWordSequences) {
      if (w.length - 1 > output.length) continue;
      boolean match = true;
      for (int j = 0; j < w.length - 1; j++)
        if (output[output.length - (w.length - 1) + j] != w[j]) match = false;
      if (match) x[w[w.length - 1]] = Float.NEGATIVE_INFINITY;
    }
    if (output.length < p.minTokens())
      for (int id : minTokensStopIds) x[id] = Float.NEGATIVE_INFINITY;
    for (Map.Entry<Integer, Double> e : p.logitBias().entrySet())
      x[e.getKey()] += (float) Math.max(-100, Math.min(100, e.getValue()));
    // penalties
    Set<Integer> seen = new HashSet<>();
    for (int t : prompt) seen.add(t);
    for (int t : output) seen.add(t);
    float rep = p.repetitionPenalty().floatValue();
    for (int t : seen) {
      if (x[t] > 0) x[t] = x[t] / rep;
      else x[t] = x[t] * rep;
    }
    Map<Integer, Integer> counts = new HashMap<>();
    for (int t : output) counts.merge(t, 1, Integer::sum);
    for (Map.Entry<Integer, Integer> e : counts.entrySet()) {
      x[e.getKey()] -= p.frequencyPenalty().floatValue() * e.getValue();
      x[e.getKey()] -= p.presencePenalty().floatValue();
    }
    double[] out = new double[v];
    if (p.temperature() < 1e-5) {
      int best = 0;
      for (int i = 1; i < v; i++) if (x[i] > x[best]) best = i;
      out[best] = 1;
      return out;
    }
    float t = (float) Math.max(p.temperature(), 0.01);
    for (int i = 0; i < v; i++) x[i] = x[i] / t;
    if (p.minP() > 0) {
      double[] probs = softmax(x);
      double pmax = Arrays.stream(probs).max().orElse(0);
      for (int i = 0; i < v; i++) if (probs[i] < p.minP() * pmax) x[i] = Float.NEGATIVE_INFINITY;
    }
    Integer[] order = new Integer[v];
    for (int i = 0; i < v; i++) order[i] = i;
    // ascending by value, like torch.sort(descending=False)
    Arrays.sort(order, Comparator.comparingDouble((Integer i) -> x[i]));
    if (p.topK() > 0 && p.topK() < v) {
      float kth = x[order[v - p.topK()]];
      for (int i = 0; i < v; i++) if (x[i] < kth) x[i] = Float.NEGATIVE_INFINITY;
    }
    if (p.topP() < 1) {
      double[] probs = softmax(x);
      double cum = 0;
      List<Integer> masked = new ArrayList<>();
      for (int j = 0; j < v; j++) {
        cum += probs[order[j]];
        if (cum <= 1 - p.topP() && j != v - 1) masked.add(order[j]);
      }
      for (int i : masked) x[i] = Float.NEGATIVE_INFINITY;
    }
    return softmax(x);
  }

  static double[] softmax(float[] x) {
    double max = Double.NEGATIVE_INFINITY;
    for (float f : x) max = Math.max(max, f);
    double[] p = new double[x.length];
    double sum = 0;
    for (int i = 0; i < x.length; i++) sum += p[i] = Math.exp(x[i] - max);
    for (int i = 0; i < x.length; i++) p[i] /= sum;
    return p;
  }

  /** Raw log-softmax in double. */
  static double[] logSoftmax(float[] x) {
    double max = Double.NEGATIVE_INFINITY;
    for (float f : x) max = Math.max(max, f);
    double sum = 0;
    for (float f : x) sum += Math.exp(f - max);
    double lse = max + Math.log(sum);
    double[] out = new double[x.length];
    for (int i = 0; i < x.length; i++) out[i] = x[i] - lse;
    return out;
  }
}
