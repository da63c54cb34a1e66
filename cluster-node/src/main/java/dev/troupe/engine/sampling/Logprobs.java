package dev.troupe.engine.sampling;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;

/**
 * Raw log-probabilities over one row of logits, vLLM's {@code compute_logprobs} + {@code
 * gather_logprobs}, without materialising the log-softmax: the log-normaliser is computed once and
 * only the needed entries are turned into logprobs. Top-k uses a bounded heap (O(V log k)), not a
 * sort of the vocabulary.
 *
 * <p>Conventions shared by sampled and prompt logprobs: logprob = logit - logsumexp(logits),
 * floored at {@link #FLOOR} (vLLM clamps to -9999 when serialising, never -inf); rank = number of
 * vocabulary entries whose logprob is at least the token's (1 = most likely; ties count against the
 * token, as {@code batched_count_greater_than} does); top-k entries carry ranks 1..k; ties between
 * equal logits are broken by lower token id first.
 */
public final class Logprobs {

  /** The lowest logprob ever reported. */
  public static final float FLOOR = -9999.0f;

  private Logprobs() {}

  /** log(sum(exp(x))) over {@code x[off .. off+n)}, in double; -inf when every entry is -inf. */
  public static double logSumExp(float[] x, int off, int n) {
    float max = Float.NEGATIVE_INFINITY;
    for (int i = off, end = off + n; i < end; i++) if (x[i] > max) max = x[i];
    if (max == Float.NEGATIVE_INFINITY) return Double.NEGATIVE_INFINITY;
    if (max == Float.POSITIVE_INFINITY) return Double.POSITIVE_INFINITY;
    double sum = 0;
    for (int i = off, end = off + n; i < end; i++) sum += Math.exp((double) x[i] - max);
    return max + Math.log(sum);
  }

  /** The logprob of a logit given the row's log-normaliser, floored. */
  public static float logprob(float logit, double logNormalizer) {
    double lp = (double) logit - logNormalizer;
    if (Double.isNaN(lp)) lp = Double.NEGATIVE_INFINITY;
    return (float) Math.max(lp, FLOOR);
  }

  /** A logprob computed elsewhere (a device), floored as {@link #logprob} floors; NaN → floor. */
  public static float floor(float logprob) {
    return Float.isNaN(logprob) ? FLOOR : Math.max(logprob, FLOOR);
  }

  /** 1-based rank: how many entries of {@code x[off .. off+n)} are >= {@code value}. */
  public static int rank(float[] x, int off, int n, float value) {
    int count = 0;
    for (int i = off, end = off + n; i < end; i++) if (x[i] >= value) count++;
    return Math.max(count, 1);
  }

  /**
   * Indices (relative to {@code off}) of the {@code k} largest entries of {@code x[off .. off+n)},
   * largest first, ties by lower index. Writes them to {@code out[0 .. k)} and returns k (clamped
   * to n). {@code out} must hold at least min(k, n) ints.
   */
  public static int topK(float[] x, int off, int n, int k, int[] out) {
    k = Math.min(k, n);
    if (k <= 0) return 0;
    // out[0..size) is a min-heap on "goodness": the root is the worst kept entry.
    int size = 0;
    for (int i = 0; i < n; i++) {
      if (size < k) {
        out[size] = i;
        siftUp(x, off, out, size++);
      } else if (better(x, off, i, out[0])) {
        out[0] = i;
        siftDown(x, off, out, 0, size);
      }
    }
    // Heap sort in place: repeatedly move the worst to the end -> best first.
    for (int end = size - 1; end > 0; end--) {
      int t = out[0];
      out[0] = out[end];
      out[end] = t;
      siftDown(x, off, out, 0, end);
    }
    return size;
  }

  /** True when entry a outranks entry b: larger value, or equal value and lower index. */
  static boolean better(float[] x, int off, int a, int b) {
    float va = x[off + a], vb = x[off + b];
    return va > vb || (va == vb && a < b);
  }

  private static void siftUp(float[] x, int off, int[] h, int i) {
    while (i > 0) {
      int p = (i - 1) >>> 1;
      if (!better(x, off, h[p], h[i])) break;
      int t = h[p];
      h[p] = h[i];
      h[i] = t;
      i = p;
    }
  }

  private static void siftDown(float[] x, int off, int[] h, int i, int size) {
    while (true) {
      int l = 2 * i + 1;
      if (l >= size) return;
      int worst = l;
      int r = l + 1;
      if (r < size && better(x, off, h[l], h[r])) worst = r;
      if (!better(x, off, h[i], h[worst])) return;
      int t = h[i];
      h[i] = h[worst];
      h[worst] = t;
      i = worst;
    }
  }

  /**
   * vLLM's per-position logprobs dictionary for one row: {@code token} first (with its counted
   * rank), then the top {@code k} by rank (ranks 1..k). When {@code token} is also among the top k
   * it keeps its first position but takes the top-k entry's rank, as Python's dict update does.
   *
   * @param k number of top entries; negative means the whole vocabulary
   */
  public static List<TokenLogprob> entries(float[] logits, int off, int n, int token, int k) {
    return entries(logits, off, n, token, k, logSumExp(logits, off, n));
  }

  static List<TokenLogprob> entries(
      float[] logits, int off, int n, int token, int k, double logNormalizer) {
    if (k < 0 || k > n) k = n;
    int[] top = new int[k];
    int count = topK(logits, off, n, k, top);
    List<TokenLogprob> out = new ArrayList<>(count + 1);
    float tokenLogit = logits[off + token];
    int tokenIndexInTop = -1;
    for (int j = 0; j < count; j++) if (top[j] == token) tokenIndexInTop = j;
    int tokenRank = tokenIndexInTop >= 0 ? tokenIndexInTop + 1 : rank(logits, off, n, tokenLogit);
    out.add(new TokenLogprob(token, logprob(tokenLogit, logNormalizer), tokenRank));
    for (int j = 0; j < count; j++) {
      if (top[j] == token) continue;
      out.add(new TokenLogprob(top[j], logprob(logits[off + top[j]], logNormalizer), j + 1));
    }
    return out;
  }

  /**
   * Prompt logprobs (vLLM's {@code prompt_logprobs}): one entry per prompt token, the first null;
   * entry {@code i} describes {@code promptIds[i]} as predicted by the logits of position {@code i
   * - 1}: the actual token first, then the top {@code k} alternatives.
   *
   * @param logits {@code [promptIds.length - 1 or more][vocab]}: row i holds the logits computed at
   *     prompt position i (a trailing row for the last position is ignored)
   * @param k number of alternatives (0 = the actual token only, negative = whole vocabulary)
   */
  public static List<Map<Integer, TokenLogprob>> promptLogprobs(
      float[][] logits, int[] promptIds, int k) {
    if (promptIds.length == 0) return List.of();
    if (logits.length < promptIds.length - 1)
      throw new IllegalArgumentException(
          "need logits for " + (promptIds.length - 1) + " positions, got " + logits.length);
    List<Map<Integer, TokenLogprob>> out = new ArrayList<>(promptIds.length);
    out.add(null);
    for (int i = 1; i < promptIds.length; i++)
      out.add(promptPosition(logits[i - 1], promptIds[i], k));
    return Collections.unmodifiableList(out);
  }

  /**
   * One prompt position (for engines that get prompt logits chunk by chunk): the logprobs of {@code
   * actualToken} under {@code logits}, plus the top {@code k}, as an insertion-ordered map.
   */
  public static Map<Integer, TokenLogprob> promptPosition(float[] logits, int actualToken, int k) {
    if (actualToken < 0 || actualToken >= logits.length)
      throw new IllegalArgumentException("token " + actualToken + " outside the logits row");
    List<TokenLogprob> entries = entries(logits, 0, logits.length, actualToken, k);
    var map = new java.util.LinkedHashMap<Integer, TokenLogprob>(entries.size() * 2);
    for (TokenLogprob e : entries) map.put(e.tokenId(), e);
    return Collections.unmodifiableMap(map);
  }

  /** Sorts {@code idx[0..count)} by descending {@code x[idx]}, ties by lower index. */
  static void sortDescending(float[] x, int[] idx, int count, long[] scratch) {
    for (int j = 0; j < count; j++) {
      int bits = Float.floatToIntBits(x[idx[j]]);
      int sortable = bits < 0 ? bits ^ 0x7fffffff : bits; // monotone in the float value
      scratch[j] = ((long) ~sortable << 32) | (idx[j] & 0xffffffffL); // ~ reverses the order
    }
    Arrays.sort(scratch, 0, count);
    for (int j = 0; j < count; j++) idx[j] = (int) scratch[j];
  }
}
