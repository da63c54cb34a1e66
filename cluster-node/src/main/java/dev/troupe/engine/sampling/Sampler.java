package dev.troupe.engine.sampling;

import dev.troupe.engine.spi.LogitsProcessor;
import dev.troupe.protocol.cluster.SamplingParams;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeSet;

/**
 * Turns one choice's logits into its next token, exactly in vLLM V1's order ({@code
 * v1/sample/sampler.py}):
 *
 * <ol>
 *   <li>raw logprobs of the row, before anything below (vLLM's default {@code raw_logprobs});
 *   <li>{@code allowed_token_ids}: every other token -inf;
 *   <li>{@code bad_words} (see {@link BadWords});
 *   <li>{@code min_tokens}: while fewer outputs exist, EOS, generation-config EOS ids and {@code
 *       stop_token_ids} are -inf; then {@code logit_bias} (added, clamped to ±100); then custom
 *       processors that are not argmax-invariant;
 *   <li>penalties: repetition over prompt ∪ output (positive logits ÷ p, others × p), then {@code
 *       -= frequency × count} and {@code -= presence × seen} over the output only;
 *   <li>greedy (temperature below 1e-5): argmax, first index on ties;
 *   <li>otherwise: ÷ temperature (values in (0, 0.01) are raised to 0.01 as vLLM does),
 *       argmax-invariant custom processors, {@code min_p} (drop p &lt; min_p·p_max), {@code top_k}
 *       (keep logits ≥ the k-th largest; 0/-1 off), {@code top_p} (keep a token when the
 *       probability of the tokens ranked above it is below p, so at least one), then sample.
 * </ol>
 *
 * <p>Randomness: one {@link SplittableRandom} per choice, seeded with {@code seed + choiceIndex}
 * when the request has a seed (unseeded otherwise, and for seed -1 as in vLLM), drawing one uniform
 * per random step and picking the token by inverse CDF over the kept tokens in a fixed order. The
 * draw depends only on this choice's own history, so a seeded request yields the same tokens
 * whatever else shares the batch. (vLLM draws with an exponential race over torch's generator; the
 * distribution is the same, the bit stream cannot be, and one draw per step avoids 150k
 * logarithms.)
 *
 * <p>Use: per step call {@link #next(float[])}, then {@link #accept(int)} with the token actually
 * appended (normally {@code sample.token()}); {@link #replay(int)} restores a choice from tokens
 * generated elsewhere. Not thread-safe; see {@link SamplerFactory}.
 */
public final class Sampler {

  /** vLLM raises temperatures in (0, 0.01) to this, to avoid overflow. */
  static final double MIN_RANDOM_TEMPERATURE = SamplingParams.MIN_RANDOM_TEMPERATURE;

  private static final float LOGIT_BIAS_LIMIT = 100f;

  /** top_p histogram: bins over the top TOP_P_RANGE logit units (nats before temperature). */
  static final int TOP_P_BINS = 2048;

  private static final double TOP_P_RANGE = 40.0;

  private final SamplerFactory.Workspace ws;
  private final int vocab;
  private final SamplingParams params;
  private final int[] prompt;
  private final int logprobs; // -2 = none, -1 = whole vocabulary, else k
  private final boolean greedy;
  private final float temperature;
  private final double minP;
  private final int topK;
  private final double topP;
  private final SplittableRandom random;

  private final int[] allowed; // sorted, or null
  private final float[] allowedValues;
  private final BadWords badWords;
  private final TokenConstraint constraint; // structured outputs; null when unconstrained
  private final int[] stopIds; // masked while output < min_tokens
  private final int[] biasIds;
  private final float[] biasValues;
  private final List<LogitsProcessor> plainProcessors;
  private final List<LogitsProcessor> invariantProcessors;
  private final Map<String, Object> engineXargs;

  private final float repetition;
  private final float frequency;
  private final float presence;
  private final BitSet seen; // prompt ∪ output, when repetition != 1
  private final IntCounts outputCounts; // when frequency or presence != 0

  private float lastMax;
  private int[] output = new int[16];
  private int outputLength;

  Sampler(
      SamplerFactory factory,
      SamplingParams p,
      int[] promptTokenIds,
      int choiceIndex,
      BadWords badWords,
      List<LogitsProcessor> custom,
      TokenConstraint constraint) {
    if (!p.resolved())
      throw new IllegalArgumentException("unresolved sampling parameters (see withDefaults)");
    SamplerFactory.checkVocabulary(p, factory.vocabSize());
    if (choiceIndex < 0) throw new IllegalArgumentException("negative choice index");
    this.ws = factory.workspace;
    this.vocab = factory.vocabSize();
    this.params = p;
    this.prompt = promptTokenIds.clone();
    this.logprobs = p.logprobs() == null ? -2 : (p.logprobs() < 0 ? -1 : p.logprobs());
    this.greedy = p.greedy();
    this.temperature = (float) Math.max(p.temperature(), MIN_RANDOM_TEMPERATURE);
    this.minP = p.minP();
    this.topK = p.topK() <= 0 || p.topK() >= vocab ? 0 : p.topK();
    this.topP = p.topP();
    // vLLM treats seed -1 as "no seed" (SamplingParams.__post_init__)
    boolean seeded = p.seed() != null && p.seed() != -1L;
    this.random = seeded ? new SplittableRandom(p.seed() + choiceIndex) : new SplittableRandom();

    if (p.allowedTokenIds() != null) {
      allowed =
          p.allowedTokenIds().stream().mapToInt(Integer::intValue).sorted().distinct().toArray();
      allowedValues = new float[allowed.length];
    } else {
      allowed = null;
      allowedValues = null;
    }
    this.badWords = badWords;
    this.constraint = constraint;

    TreeSet<Integer> stops = new TreeSet<>(p.stopTokenIds());
    EosTokens eos = factory.eos();
    if (eos.eosTokenId() >= 0 && eos.eosTokenId() < vocab) stops.add(eos.eosTokenId());
    for (int id : eos.generationEosIds()) if (id >= 0 && id < vocab) stops.add(id);
    this.stopIds =
        p.minTokens() > 0 ? stops.stream().mapToInt(Integer::intValue).toArray() : new int[0];

    int nb = p.logitBias().size();
    biasIds = new int[nb];
    biasValues = new float[nb];
    int j = 0;
    for (var e : new java.util.TreeMap<>(p.logitBias()).entrySet()) {
      biasIds[j] = e.getKey();
      biasValues[j++] =
          (float) Math.max(-LOGIT_BIAS_LIMIT, Math.min(LOGIT_BIAS_LIMIT, e.getValue()));
    }

    List<LogitsProcessor> plain = new ArrayList<>();
    List<LogitsProcessor> invariant = new ArrayList<>();
    for (LogitsProcessor lp : custom) (lp.argmaxInvariant() ? invariant : plain).add(lp);
    this.plainProcessors = List.copyOf(plain);
    this.invariantProcessors = List.copyOf(invariant);
    this.engineXargs = p.engineXargs();

    this.repetition = p.repetitionPenalty().floatValue();
    this.frequency = p.frequencyPenalty().floatValue();
    this.presence = p.presencePenalty().floatValue();
    if (repetition != 1f) {
      seen = new BitSet(vocab);
      for (int t : prompt) if (t >= 0 && t < vocab) seen.set(t);
    } else {
      seen = null;
    }
    outputCounts = frequency != 0f || presence != 0f ? new IntCounts() : null;
  }

  /**
   * Chooses the next token from this choice's raw logits row (length = vocabulary size; not
   * modified). Does not record the token: call {@link #accept(int)} afterwards.
   */
  public Sample next(float[] logits) {
    if (logits.length != vocab)
      throw new IllegalArgumentException(
          "logits row has " + logits.length + " entries, vocabulary is " + vocab);
    float[] x = ws.work;
    System.arraycopy(logits, 0, x, 0, vocab);
    process(x);
    int token = greedy ? argmax(x) : sampleRandom(x);
    if (logprobs == -2) return new Sample(token, Float.NaN, 0, null);
    double logNormalizer = Logprobs.logSumExp(logits, 0, vocab);
    List<TokenLogprob> entries = Logprobs.entries(logits, 0, vocab, token, logprobs, logNormalizer);
    return new Sample(token, entries.get(0).logprob(), entries.get(0).rank(), entries);
  }

  /** Records the token appended to this choice's output (counts for penalties, min_tokens, ...). */
  public void accept(int token) {
    if (token < 0 || token >= vocab)
      throw new IllegalArgumentException("token " + token + " outside the vocabulary");
    if (outputLength == output.length) output = Arrays.copyOf(output, output.length * 2);
    output[outputLength++] = token;
    if (seen != null) seen.set(token);
    if (outputCounts != null) outputCounts.increment(token);
    if (constraint != null) constraint.accept(token);
  }

  /**
   * Restores the state {@link #next} then {@link #accept} left for a token this choice already
   * generated elsewhere (a request migrated from a lost replica): the token is accepted (penalty
   * counts, {@code min_tokens}, bad words, the token constraint) and a random choice's generator
   * advances by the one draw its step took. Replaying a seeded choice's tokens in order leaves it
   * exactly where the original sampler was, so it continues with the same tokens.
   */
  public void replay(int token) {
    if (!greedy) random.nextDouble();
    accept(token);
  }

  /** Whether the choice's token constraint is complete (see {@link TokenConstraint#finished}). */
  public boolean constraintFinished() {
    return constraint != null && constraint.finished();
  }

  public int outputLength() {
    return outputLength;
  }

  /** A copy of the tokens accepted so far. */
  public int[] outputTokenIds() {
    return Arrays.copyOf(output, outputLength);
  }

  public SamplingParams params() {
    return params;
  }

  /**
   * Steps 2-5: masks, biases, custom processors and penalties, in place; then the choice's {@link
   * TokenConstraint} (structured outputs), the last word before the pick.
   */
  private void process(float[] x) {
    if (allowed != null) {
      for (int i = 0; i < allowed.length; i++) allowedValues[i] = x[allowed[i]];
      Arrays.fill(x, Float.NEGATIVE_INFINITY);
      for (int i = 0; i < allowed.length; i++) x[allowed[i]] = allowedValues[i];
    }
    if (!badWords.isEmpty()) badWords.apply(x, output, outputLength);
    if (outputLength < params.minTokens()) for (int id : stopIds) x[id] = Float.NEGATIVE_INFINITY;
    for (int i = 0; i < biasIds.length; i++) x[biasIds[i]] += biasValues[i];
    if (!plainProcessors.isEmpty()) applyCustom(plainProcessors, x);
    if (seen != null) {
      for (int t = seen.nextSetBit(0); t >= 0; t = seen.nextSetBit(t + 1))
        x[t] = x[t] > 0 ? x[t] / repetition : x[t] * repetition;
    }
    if (outputCounts != null) {
      for (int slot = outputCounts.first(); slot >= 0; slot = outputCounts.next(slot)) {
        int t = outputCounts.key(slot);
        x[t] -= frequency * outputCounts.count(slot);
        x[t] -= presence;
      }
    }
    if (constraint != null) constraint.mask(x);
  }

  /**
   * Runs request-named processors; one that throws fails only this request, with a 400 naming
   * {@code logits_processors} (the engine catches it per row).
   */
  private void applyCustom(List<LogitsProcessor> processors, float[] x) {
    Context ctx = new Context();
    for (LogitsProcessor lp : processors) {
      try {
        lp.apply(ctx, x);
      } catch (RuntimeException e) {
        throw new InvalidSamplingParamsException(
            "logits_processors",
            "Logits processor " + lp.getClass().getName() + " failed: " + e,
            e);
      }
    }
  }

  /**
   * Step 7: temperature, min_p, top_k, top_p and the draw. The uniform is drawn first, whatever the
   * row holds, so every random step takes exactly one draw and {@link #replay} can restore the
   * generator from the tokens alone.
   */
  private int sampleRandom(float[] x) {
    double u = random.nextDouble();
    int count = filterRandom(x);
    if (count == NOTHING_ALLOWED) return argmax(x);
    return draw(x, ws.idx, count, lastMax, u);
  }

  /**
   * The distribution {@link #next} would draw from for this row, after every processor and filter
   * (one-hot for greedy rows); consumes no randomness. For tests and diagnostics.
   */
  double[] probabilities(float[] logits) {
    float[] x = ws.work;
    System.arraycopy(logits, 0, x, 0, vocab);
    process(x);
    double[] p = new double[vocab];
    if (greedy) {
      p[argmax(x)] = 1;
      return p;
    }
    int count = filterRandom(x);
    if (count == NOTHING_ALLOWED) {
      p[argmax(x)] = 1;
      return p;
    }
    double total = 0;
    if (count < 0) {
      for (int i = 0; i < vocab; i++) total += p[i] = weight(x[i], lastMax);
    } else {
      for (int j = 0; j < count; j++) total += p[ws.idx[j]] = weight(x[ws.idx[j]], lastMax);
    }
    for (int i = 0; i < vocab; i++) p[i] /= total;
    return p;
  }

  private static final int NOTHING_ALLOWED = -2;

  /**
   * Temperature, argmax-invariant processors, min_p, top_k and top_p on x in place. Returns -1 when
   * every finite entry of x is still a candidate, else the number of candidates in ws.idx (best
   * first), or NOTHING_ALLOWED; sets lastMax to the largest logit.
   */
  private int filterRandom(float[] x) {
    for (int i = 0; i < vocab; i++) x[i] = x[i] / temperature;
    if (!invariantProcessors.isEmpty()) applyCustom(invariantProcessors, x);
    float max = max(x);
    lastMax = max;
    if (max == Float.NEGATIVE_INFINITY || Float.isNaN(max)) return NOTHING_ALLOWED;
    if (minP > 0) {
      // p_i < min_p * p_max  <=>  x_i - x_max < ln(min_p)
      double cut = max + Math.log(minP);
      for (int i = 0; i < vocab; i++) if (x[i] < cut) x[i] = Float.NEGATIVE_INFINITY;
    }
    int[] idx = ws.idx;
    int count = -1; // -1: dense over the whole row; else idx[0..count) sorted, best first
    if (topK > 0) {
      int k = Logprobs.topK(x, 0, vocab, topK, idx);
      float kth = x[idx[k - 1]];
      count = 0;
      for (int i = 0; i < vocab; i++)
        if (x[i] >= kth && x[i] != Float.NEGATIVE_INFINITY) idx[count++] = i;
      Logprobs.sortDescending(x, idx, count, ws.keys);
    }
    if (topP < 1.0) count = count >= 0 ? topPCut(x, idx, count) : topPDense(x, idx, max);
    return count;
  }

  /** Keeps the prefix of idx[0..count) where the probability mass ranked above is below top_p. */
  private int topPCut(float[] x, int[] idx, int count) {
    float top = x[idx[0]];
    double z = 0;
    for (int j = 0; j < count; j++) z += Math.exp((double) x[idx[j]] - top);
    return prefixBelow(x, idx, count, top, z);
  }

  private int prefixBelow(float[] x, int[] idx, int count, float max, double z) {
    double before = 0;
    for (int j = 0; j < count; j++) {
      if (before >= topP) return Math.max(j, 1);
      before += Math.exp((double) x[idx[j]] - max) / z;
    }
    return count;
  }

  /**
   * top_p over the whole row without sorting it: tokens are binned by logit, bins are summed from
   * the top until the mass reaches top_p, and only the bin where it does is sorted. Tokens in
   * higher bins are kept (less than top_p ranks above them), lower bins dropped. Leaves the kept
   * tokens in idx (higher bins unordered, then the boundary bin best first) and returns how many.
   */
  private int topPDense(float[] x, int[] idx, float max) {
    float min = max;
    for (int i = 0; i < vocab; i++) if (x[i] < min && x[i] != Float.NEGATIVE_INFINITY) min = x[i];
    double range = Math.min((double) max - min, TOP_P_RANGE);
    double[] mass = ws.binMass;
    java.util.Arrays.fill(mass, 0);
    double binsPerUnit = range > 0 ? (TOP_P_BINS - 1) / range : 0;
    double z = 0;
    for (int i = 0; i < vocab; i++) {
      if (x[i] == Float.NEGATIVE_INFINITY) continue;
      double w = Math.exp((double) x[i] - max);
      z += w;
      mass[bin(x[i], max, binsPerUnit)] += w;
    }
    double target = topP * z;
    double above = 0;
    int boundary = TOP_P_BINS - 1;
    for (int b = 0; b < TOP_P_BINS; b++) {
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

  /** Bin 0 holds the largest logits; everything more than TOP_P_RANGE below the max is last. */
  private static int bin(float logit, float max, double binsPerUnit) {
    double d = ((double) max - logit) * binsPerUnit;
    return d >= TOP_P_BINS - 1 ? TOP_P_BINS - 1 : (int) d;
  }

  /** Inverse-CDF draw over idx[0..count), or over the whole row when count is -1. */
  private int draw(float[] x, int[] idx, int count, float max, double u) {
    if (count < 0) {
      // x is not needed after the draw: keep the weights in it, so exp runs once per entry
      double total = 0;
      for (int i = 0; i < vocab; i++) total += x[i] = (float) weight(x[i], max);
      double target = u * total, cum = 0;
      int last = -1;
      for (int i = 0; i < vocab; i++) {
        double w = x[i];
        if (w <= 0) continue;
        cum += w;
        last = i;
        if (cum > target) return i;
      }
      return last >= 0 ? last : 0;
    }
    double total = 0;
    for (int j = 0; j < count; j++) total += weight(x[idx[j]], max);
    double target = u * total, cum = 0;
    int last = idx[0];
    for (int j = 0; j < count; j++) {
      double w = weight(x[idx[j]], max);
      if (w <= 0) continue;
      cum += w;
      last = idx[j];
      if (cum > target) return idx[j];
    }
    return last;
  }

  private static double weight(float logit, float max) {
    return logit == Float.NEGATIVE_INFINITY ? 0 : Math.exp((double) logit - max);
  }

  private float max(float[] x) {
    float m = Float.NEGATIVE_INFINITY;
    for (int i = 0; i < vocab; i++) if (x[i] > m) m = x[i];
    return m;
  }

  private int argmax(float[] x) {
    int best = 0;
    for (int i = 1; i < vocab; i++) if (x[i] > x[best]) best = i;
    return best;
  }

  /** The view custom processors get. */
  private final class Context implements LogitsProcessor.Context {
    @Override
    public int promptLength() {
      return prompt.length;
    }

    @Override
    public int promptToken(int index) {
      return prompt[index];
    }

    @Override
    public int outputLength() {
      return outputLength;
    }

    @Override
    public int outputToken(int index) {
      if (index >= outputLength) throw new IndexOutOfBoundsException(index);
      return output[index];
    }

    @Override
    public Map<String, Object> engineXargs() {
      return engineXargs;
    }
  }
}
