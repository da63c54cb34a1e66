package dev.troupe.engine.sampling;

import dev.troupe.engine.DeviceSampling;
import dev.troupe.engine.spi.LogitsProcessor;
import dev.troupe.protocol.cluster.SamplingParams;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeSet;
import java.util.stream.IntStream;

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
 *       probability of the tokens ranked above it is below p, so at least one; tokens tied with the
 *       last one kept stay too), then sample.
 * </ol>
 *
 * <p>Randomness: one {@link SplittableRandom} per choice, seeded with {@code seed + choiceIndex}
 * when the request has a seed (unseeded otherwise, and for seed -1 as in vLLM), drawing exactly one
 * uniform per random step and picking the token by inverse CDF over the kept tokens in token-id
 * order. The draw depends only on this choice's own history, so a seeded request yields the same
 * tokens whatever else shares the batch, and the same on a device that samples with {@link
 * #deviceParams()}. (vLLM draws with an exponential race over torch's generator; the distribution
 * is the same, the bit stream cannot be, and one draw per step avoids 150k logarithms.)
 *
 * <p>Use: per step call {@link #next(float[])}, then {@link #accept(int)} with the token actually
 * appended (normally {@code sample.token()}); {@link #replay(int)} restores a choice from tokens
 * generated elsewhere. Not thread-safe; see {@link SamplerFactory}.
 */
public final class Sampler {

  /** vLLM raises temperatures in (0, 0.01) to this, to avoid overflow. */
  static final double MIN_RANDOM_TEMPERATURE = SamplingParams.MIN_RANDOM_TEMPERATURE;

  private static final float LOGIT_BIAS_LIMIT = 100f;

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
  private double pendingUniform = Double.NaN; // a device row's draw for this step, until accept
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
    float[] x = logits; // greedy over an unedited row reads it in place
    if (!greedy || !processKeepsRow()) {
      x = ws.work;
      System.arraycopy(logits, 0, x, 0, vocab);
      process(x);
    }
    int token = greedy ? argmax(x) : sampleRandom(x);
    if (logprobs == -2) return new Sample(token, Float.NaN, 0, null);
    double logNormalizer = Logprobs.logSumExp(logits, 0, vocab);
    List<TokenLogprob> entries = Logprobs.entries(logits, 0, vocab, token, logprobs, logNormalizer);
    return new Sample(token, entries.get(0).logprob(), entries.get(0).rank(), entries);
  }

  /**
   * This step's state for a device that samples the row itself ({@link DeviceSampling}): the sparse
   * edits {@link #next} would make, the filters, and this step's uniform (drawn now and kept until
   * {@link #accept}, so the device picks what {@code next} would pick from the same logits). Null
   * when a device cannot apply the step exactly — custom logits processors or a token constraint
   * (they need the whole row), logprobs of the whole vocabulary or more than {@value
   * DeviceSampling#MAX_TOP_LOGPROBS} — and the row must be sampled on the host with {@link #next}.
   */
  public DeviceSampling.Params deviceParams() {
    if (!plainProcessors.isEmpty() || !invariantProcessors.isEmpty() || constraint != null)
      return null;
    if (logprobs == -1 || logprobs > DeviceSampling.MAX_TOP_LOGPROBS) return null;
    int[] none = new int[0];
    int[] masked = badWords.isEmpty() ? none : badWords.banned(output, outputLength);
    if (outputLength < params.minTokens() && stopIds.length > 0)
      masked = IntStream.concat(IntStream.of(masked), IntStream.of(stopIds)).distinct().toArray();
    int n = outputCounts == null ? 0 : outputCounts.size();
    int[] countIds = new int[n], counts = new int[n];
    if (n > 0)
      for (int slot = outputCounts.first(), j = 0; slot >= 0; slot = outputCounts.next(slot), j++) {
        countIds[j] = outputCounts.key(slot);
        counts[j] = outputCounts.count(slot);
      }
    return new DeviceSampling.Params(
        greedy,
        temperature,
        topK,
        (float) topP,
        (float) minP,
        greedy ? 0 : keptUniform(),
        logprobs == -2 ? -1 : logprobs,
        allowed == null ? none : allowed,
        masked,
        biasIds,
        biasValues,
        repetition,
        seen == null ? none : seen.stream().toArray(),
        frequency,
        presence,
        countIds,
        counts);
  }

  /**
   * This step's uniform for a device row: drawn once and kept until {@link #accept} (or a host
   * {@link #next}), so a step whose forward pass failed and is run again draws nothing new.
   */
  private double keptUniform() {
    if (Double.isNaN(pendingUniform)) pendingUniform = random.nextDouble();
    return pendingUniform;
  }

  /** Records the token appended to this choice's output (counts for penalties, min_tokens, ...). */
  public void accept(int token) {
    if (token < 0 || token >= vocab)
      throw new IllegalArgumentException("token " + token + " outside the vocabulary");
    if (outputLength == output.length) output = Arrays.copyOf(output, output.length * 2);
    output[outputLength++] = token;
    pendingUniform = Double.NaN;
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
    if (!greedy) keptUniform(); // the step's one draw (already taken when a device row kept it)
    accept(token);
  }

  /** Whether the choice's token constraint is complete (see {@link TokenConstraint#finished}). */
  public boolean constraintFinished() {
    return constraint != null && constraint.finished();
  }

  /** Whether the budget steered the constraint to completion ({@link TokenConstraint}). */
  public boolean constraintCompletedByBudget() {
    return constraint != null && constraint.completedByBudget();
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
   * Whether {@link #process} would leave this step's row as it is (then greedy reads the logits in
   * place): one condition per edit {@code process} makes, so a new edit there belongs here too.
   */
  private boolean processKeepsRow() {
    return allowed == null
        && badWords.isEmpty()
        && (outputLength >= params.minTokens() || stopIds.length == 0)
        && biasIds.length == 0
        && plainProcessors.isEmpty()
        && seen == null
        && outputCounts == null
        && constraint == null;
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
    if (constraint != null) constraint.mask(x, params.maxTokens() - outputLength);
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
    // one draw per random step, even when nothing is left to draw from (the device's rule too);
    // the draw deviceParams kept for this step if it made one
    double u = Double.isNaN(pendingUniform) ? random.nextDouble() : pendingUniform;
    pendingUniform = Double.NaN;
    if (!filterRandom(x)) return argmax(x);
    return draw(x, u, lastMax);
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
    if (greedy || !filterRandom(x)) {
      p[argmax(x)] = 1;
      return p;
    }
    double total = 0;
    for (int i = 0; i < vocab; i++) total += p[i] = weight(x[i], lastMax);
    for (int i = 0; i < vocab; i++) p[i] /= total;
    return p;
  }

  /**
   * Temperature, argmax-invariant processors, min_p, top_k and top_p on x in place: every token
   * left finite is a candidate. Returns false when none is; sets lastMax to the largest logit.
   */
  private boolean filterRandom(float[] x) {
    for (int i = 0; i < vocab; i++) x[i] = x[i] / temperature;
    if (!invariantProcessors.isEmpty()) applyCustom(invariantProcessors, x);
    float max = max(x);
    lastMax = max;
    if (max == Float.NEGATIVE_INFINITY || Float.isNaN(max)) return false;
    if (minP > 0) {
      // p_i < min_p * p_max  <=>  x_i - x_max < ln(min_p)
      double cut = max + Math.log(minP);
      for (int i = 0; i < vocab; i++) if (x[i] < cut) x[i] = Float.NEGATIVE_INFINITY;
    }
    if (topK > 0 || topP < 1.0) {
      float t = TopKTopP.threshold(x, vocab, topK, topP, max, ws);
      for (int i = 0; i < vocab; i++) if (x[i] < t) x[i] = Float.NEGATIVE_INFINITY;
    }
    return true;
  }

  /**
   * Inverse-CDF draw of {@code u} over the finite entries of x in token-id order (the device's
   * order, so the same uniform picks the same token there).
   */
  private int draw(float[] x, double u, float max) {
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

  private static double weight(float logit, float max) {
    return logit == Float.NEGATIVE_INFINITY ? 0 : Math.exp((double) logit - max);
  }

  private float max(float[] x) {
    float m = Float.NEGATIVE_INFINITY;
    for (int i = 0; i < vocab; i++) if (x[i] > m) m = x[i];
    return m;
  }

  /**
   * The first index of the largest value (NaN never wins; a NaN at index 0 stays). The running
   * maximum is kept in a register rather than re-read as {@code x[best]}: 22 against 30 µs per
   * 128k-logit row, where the branch-free {@code Math.max} form took 78 (measured on the bench
   * machine, JDK 17).
   */
  private int argmax(float[] x) {
    int best = 0;
    float m = x[0];
    for (int i = 1; i < vocab; i++) {
      float v = x[i];
      if (v > m) {
        m = v;
        best = i;
      }
    }
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
