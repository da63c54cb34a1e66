package dev.troupe.protocol.cluster;

import dev.troupe.protocol.CborSerializable;
import java.util.List;
import java.util.Map;

/**
 * Everything the engine needs to turn logits into tokens and decide when to stop. Engine-side
 * vocabulary: no OpenAI field names.
 *
 * <p>The seven fields a model's {@code generation_config.json} may default (temperature, top_p,
 * top_k, min_p and the three penalties) are null when the client left them out: the worker's input
 * processor fills them once with {@link #withDefaults} (the model's value, else OpenAI's), so the
 * engine only ever sees {@link #resolved()} parameters.
 *
 * <p>This record owns the value rules of those fields, as vLLM's {@code SamplingParams} does
 * ({@code _verify_args}): every value present is checked when the record is built (at the gateway
 * for what the client sent, at the worker for the model's defaults), and a violation is an {@link
 * InvalidValue} naming the OpenAI field. It also normalizes as vLLM does: {@code top_k} -1 is 0
 * (off), a temperature in (0, 0.01) is raised to 0.01, and a greedy temperature turns top_p, top_k
 * and min_p off.
 *
 * @param n number of choices (beam width when {@code useBeamSearch})
 * @param temperature 0 (or below 1e-5) means greedy; null = the model's default
 * @param topP in (0, 1]; 1 = off; null = the model's default
 * @param topK 0 = off; null = the model's default
 * @param minP in [0, 1]; 0 = off; null = the model's default
 * @param presencePenalty over output tokens, in [-2, 2]; null = the model's default
 * @param frequencyPenalty over output tokens, in [-2, 2]; null = the model's default
 * @param repetitionPenalty over prompt and output tokens, > 0; 1 = off; null = the model's default
 * @param seed per-request RNG seed, null = unseeded; choice i uses seed + i
 * @param maxTokens maximum generated tokens per choice; null = the client set none: up to the
 *     context (the worker, which knows the prompt, sets it); there is no in-band "unset" value, so
 *     every explicit value, {@code Integer.MAX_VALUE} included, is checked against the context
 * @param minTokens EOS and stop tokens are suppressed until this many tokens exist
 * @param stop stop strings, matched across token boundaries
 * @param stopTokenIds extra token ids that end a choice ({@code stop_reason} = the id)
 * @param includeStopStrInOutput keep the matched stop string (or stop token text) in the output
 * @param ignoreEos keep generating past EOS
 * @param logprobs null = none, else the number of top logprobs per generated token (0..20)
 * @param promptLogprobs null = none, else the number of top logprobs per prompt token
 * @param skipSpecialTokens drop special tokens from the detokenized text
 * @param spacesBetweenSpecialTokens put spaces between special tokens in the text
 * @param logitBias token id to bias, already clamped to [-100, 100]
 * @param allowedTokenIds null = all tokens allowed; never empty
 * @param badWords words never to generate (tokenized by the worker, with and without a leading
 *     space)
 * @param useBeamSearch beam search of width {@code n}
 * @param lengthPenalty beam score = cumulative logprob / length^lengthPenalty
 * @param logitsProcessors custom processors, by qualified class name and constructor arguments
 * @param engineXargs free-form extension arguments handed to logits processors
 * @param structuredOutputs the constraint every generated token must respect (a grammar the worker
 *     compiles), or null
 */
public record SamplingParams(
    int n,
    Double temperature,
    Double topP,
    Integer topK,
    Double minP,
    Double presencePenalty,
    Double frequencyPenalty,
    Double repetitionPenalty,
    Long seed,
    Integer maxTokens,
    int minTokens,
    List<String> stop,
    List<Integer> stopTokenIds,
    boolean includeStopStrInOutput,
    boolean ignoreEos,
    Integer logprobs,
    Integer promptLogprobs,
    boolean skipSpecialTokens,
    boolean spacesBetweenSpecialTokens,
    Map<Integer, Double> logitBias,
    List<Integer> allowedTokenIds,
    List<String> badWords,
    boolean useBeamSearch,
    double lengthPenalty,
    List<LogitsProcessorSpec> logitsProcessors,
    Map<String, Object> engineXargs,
    StructuredOutputsParams structuredOutputs)
    implements CborSerializable {

  /** Below this temperature sampling is greedy, as in vLLM. */
  public static final double GREEDY_EPSILON = 1e-5;

  /** vLLM raises temperatures in (0, 0.01) to this, to avoid overflow in the softmax. */
  public static final double MIN_RANDOM_TEMPERATURE = 0.01;

  public SamplingParams {
    if (n < 1) throw new IllegalArgumentException("n must be at least 1, got " + n);
    if (maxTokens != null && maxTokens < 0)
      throw new IllegalArgumentException("maxTokens must be >= 0");
    if (temperature != null) {
      finite(temperature, "temperature");
      if (temperature < 0)
        throw new InvalidValue(
            "temperature", "temperature must be non-negative, got " + temperature + ".");
      if (temperature >= GREEDY_EPSILON && temperature < MIN_RANDOM_TEMPERATURE)
        temperature = MIN_RANDOM_TEMPERATURE;
    }
    if (topP != null) {
      finite(topP, "top_p");
      if (!(topP > 0 && topP <= 1))
        throw new InvalidValue("top_p", "top_p must be in (0, 1], got " + topP + ".");
    }
    if (topK != null) {
      if (topK < -1)
        throw new InvalidValue(
            "top_k", "top_k must be 0 (disable), or at least 1, got " + topK + ".");
      if (topK == -1) topK = 0;
    }
    if (minP != null) {
      finite(minP, "min_p");
      if (minP < 0 || minP > 1)
        throw new InvalidValue("min_p", "min_p must be in [0, 1], got " + minP + ".");
    }
    penalty(presencePenalty, "presence_penalty");
    penalty(frequencyPenalty, "frequency_penalty");
    if (repetitionPenalty != null) {
      finite(repetitionPenalty, "repetition_penalty");
      if (repetitionPenalty <= 0)
        throw new InvalidValue(
            "repetition_penalty",
            "repetition_penalty must be greater than zero, got " + repetitionPenalty + ".");
    }
    if (temperature != null && temperature < GREEDY_EPSILON) {
      if (n > 1 && !useBeamSearch)
        throw new InvalidValue("n", "n must be 1 when using greedy sampling, got " + n + ".");
      // Greedy picks the argmax, which these filters never remove: vLLM turns them off.
      topP = 1.0;
      topK = 0;
      minP = 0.0;
    }
    if (allowedTokenIds != null && allowedTokenIds.isEmpty())
      throw new InvalidValue("allowed_token_ids", "allowed_token_ids is not None and empty!");
    bounded(stop, RequestLimits.STOP, "stop", "strings");
    if (stop != null && chars(stop) > RequestLimits.STOP_CHARS)
      throw new InvalidValue(
          "stop",
          RequestLimits.tooMany("stop", chars(stop), RequestLimits.STOP_CHARS, "characters"));
    bounded(stopTokenIds, RequestLimits.STOP_TOKEN_IDS, "stop_token_ids", "ids");
    bounded(allowedTokenIds, RequestLimits.ALLOWED_TOKEN_IDS, "allowed_token_ids", "ids");
    bounded(badWords, RequestLimits.BAD_WORDS, "bad_words", "words");
    if (badWords != null && chars(badWords) > RequestLimits.BAD_WORDS_CHARS)
      throw new InvalidValue(
          "bad_words",
          RequestLimits.tooMany(
              "bad_words", chars(badWords), RequestLimits.BAD_WORDS_CHARS, "characters"));
    if (logitBias != null && logitBias.size() > RequestLimits.LOGIT_BIAS)
      throw new InvalidValue(
          "logit_bias",
          RequestLimits.tooMany(
              "logit_bias", logitBias.size(), RequestLimits.LOGIT_BIAS, "entries"));
    bounded(logitsProcessors, RequestLimits.LOGITS_PROCESSORS, "logits_processors", "entries");
    if (engineXargs != null && engineXargs.size() > RequestLimits.ENGINE_XARGS)
      throw new InvalidValue(
          "engine_xargs",
          RequestLimits.tooMany(
              "engine_xargs", engineXargs.size(), RequestLimits.ENGINE_XARGS, "entries"));
    stop = stop == null ? List.of() : List.copyOf(stop);
    stopTokenIds = stopTokenIds == null ? List.of() : List.copyOf(stopTokenIds);
    logitBias = logitBias == null ? Map.of() : Map.copyOf(logitBias);
    allowedTokenIds = allowedTokenIds == null ? null : List.copyOf(allowedTokenIds);
    badWords = badWords == null ? List.of() : List.copyOf(badWords);
    logitsProcessors = logitsProcessors == null ? List.of() : List.copyOf(logitsProcessors);
    engineXargs = engineXargs == null ? Map.of() : Map.copyOf(engineXargs);
  }

  /** Greedy decoding: argmax of the processed logits (false while the temperature is unset). */
  public boolean greedy() {
    return temperature != null && temperature < GREEDY_EPSILON;
  }

  /** True when no field waits for the model's default: what the engine requires. */
  public boolean resolved() {
    return temperature != null
        && topP != null
        && topK != null
        && minP != null
        && presencePenalty != null
        && frequencyPenalty != null
        && repetitionPenalty != null;
  }

  /**
   * These parameters with every unset field filled: the model's generation-config default when it
   * has one, else OpenAI's (vLLM's {@code default_sampling_params}). A model default is checked
   * like a request value, so a bad one is an {@link InvalidValue} naming the field.
   */
  public SamplingParams withDefaults(SamplingDefaults model) {
    SamplingDefaults d = model == null ? SamplingDefaults.NONE : model;
    return toBuilder()
        .temperature(or(temperature, d.temperature(), 1.0))
        .topP(or(topP, d.topP(), 1.0))
        .topK(or(topK, d.topK(), 0))
        .minP(or(minP, d.minP(), 0.0))
        .presencePenalty(or(presencePenalty, d.presencePenalty(), 0.0))
        .frequencyPenalty(or(frequencyPenalty, d.frequencyPenalty(), 0.0))
        .repetitionPenalty(or(repetitionPenalty, d.repetitionPenalty(), 1.0))
        .build();
  }

  private static <T> T or(T requested, T modelDefault, T openAiDefault) {
    return requested != null ? requested : modelDefault != null ? modelDefault : openAiDefault;
  }

  private static void finite(double v, String param) {
    if (!Double.isFinite(v))
      throw new InvalidValue(param, param + " must be a finite number, got " + v + ".");
  }

  private static void bounded(List<?> list, int limit, String param, String unit) {
    if (list != null && list.size() > limit)
      throw new InvalidValue(param, RequestLimits.tooMany(param, list.size(), limit, unit));
  }

  private static long chars(List<String> strings) {
    long n = 0;
    for (String s : strings) n += s == null ? 0 : s.length();
    return n;
  }

  private static void penalty(Double v, String param) {
    if (v == null) return;
    finite(v, param);
    if (v < -2 || v > 2)
      throw new InvalidValue(param, param + " must be in [-2, 2], got " + v + ".");
  }

  /** A value this record refuses; {@link #param()} names the OpenAI request field. */
  public static final class InvalidValue extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    private final String param;

    public InvalidValue(String param, String message) {
      super(message);
      this.param = param;
    }

    public String param() {
      return param;
    }
  }

  /** A builder starting from OpenAI's defaults: one choice, temperature 1, up to the context. */
  public static Builder builder() {
    return new Builder();
  }

  /** A builder holding this record's values. */
  public Builder toBuilder() {
    return new Builder(this);
  }

  /** A copy with another {@code maxTokens} (null: unset). */
  public SamplingParams withMaxTokens(Integer newMaxTokens) {
    return toBuilder().maxTokens(newMaxTokens).build();
  }

  /**
   * Builds {@link SamplingParams} by name, so that a new field touches three files: this record,
   * the HTTP record ({@code ChatCompletionRequest}) and the gateway's {@code ChatSamplingMapper};
   * then the engine code that reads it (docs/architecture.md). Starts from OpenAI's defaults.
   */
  public static final class Builder {
    private int n = 1;
    private Double temperature = 1.0;
    private Double topP = 1.0;
    private Integer topK = 0;
    private Double minP = 0.0;
    private Double presencePenalty = 0.0;
    private Double frequencyPenalty = 0.0;
    private Double repetitionPenalty = 1.0;
    private Long seed;
    private Integer maxTokens;
    private int minTokens = 0;
    private List<String> stop = List.of();
    private List<Integer> stopTokenIds = List.of();
    private boolean includeStopStrInOutput;
    private boolean ignoreEos;
    private Integer logprobs;
    private Integer promptLogprobs;
    private boolean skipSpecialTokens = true;
    private boolean spacesBetweenSpecialTokens = true;
    private Map<Integer, Double> logitBias = Map.of();
    private List<Integer> allowedTokenIds;
    private List<String> badWords = List.of();
    private boolean useBeamSearch;
    private double lengthPenalty = 1.0;
    private List<LogitsProcessorSpec> logitsProcessors = List.of();
    private Map<String, Object> engineXargs = Map.of();
    private StructuredOutputsParams structuredOutputs;

    private Builder() {}

    private Builder(SamplingParams p) {
      n = p.n;
      temperature = p.temperature;
      topP = p.topP;
      topK = p.topK;
      minP = p.minP;
      presencePenalty = p.presencePenalty;
      frequencyPenalty = p.frequencyPenalty;
      repetitionPenalty = p.repetitionPenalty;
      seed = p.seed;
      maxTokens = p.maxTokens;
      minTokens = p.minTokens;
      stop = p.stop;
      stopTokenIds = p.stopTokenIds;
      includeStopStrInOutput = p.includeStopStrInOutput;
      ignoreEos = p.ignoreEos;
      logprobs = p.logprobs;
      promptLogprobs = p.promptLogprobs;
      skipSpecialTokens = p.skipSpecialTokens;
      spacesBetweenSpecialTokens = p.spacesBetweenSpecialTokens;
      logitBias = p.logitBias;
      allowedTokenIds = p.allowedTokenIds;
      badWords = p.badWords;
      useBeamSearch = p.useBeamSearch;
      lengthPenalty = p.lengthPenalty;
      logitsProcessors = p.logitsProcessors;
      engineXargs = p.engineXargs;
      structuredOutputs = p.structuredOutputs;
    }

    public Builder n(int v) {
      n = v;
      return this;
    }

    public Builder temperature(Double v) {
      temperature = v;
      return this;
    }

    public Builder topP(Double v) {
      topP = v;
      return this;
    }

    public Builder topK(Integer v) {
      topK = v;
      return this;
    }

    public Builder minP(Double v) {
      minP = v;
      return this;
    }

    public Builder presencePenalty(Double v) {
      presencePenalty = v;
      return this;
    }

    public Builder frequencyPenalty(Double v) {
      frequencyPenalty = v;
      return this;
    }

    public Builder repetitionPenalty(Double v) {
      repetitionPenalty = v;
      return this;
    }

    public Builder seed(Long v) {
      seed = v;
      return this;
    }

    /** Null: unset, up to the context. */
    public Builder maxTokens(Integer v) {
      maxTokens = v;
      return this;
    }

    public Builder minTokens(int v) {
      minTokens = v;
      return this;
    }

    public Builder stop(List<String> v) {
      stop = v;
      return this;
    }

    public Builder stopTokenIds(List<Integer> v) {
      stopTokenIds = v;
      return this;
    }

    public Builder includeStopStrInOutput(boolean v) {
      includeStopStrInOutput = v;
      return this;
    }

    public Builder ignoreEos(boolean v) {
      ignoreEos = v;
      return this;
    }

    public Builder logprobs(Integer v) {
      logprobs = v;
      return this;
    }

    public Builder promptLogprobs(Integer v) {
      promptLogprobs = v;
      return this;
    }

    public Builder skipSpecialTokens(boolean v) {
      skipSpecialTokens = v;
      return this;
    }

    public Builder spacesBetweenSpecialTokens(boolean v) {
      spacesBetweenSpecialTokens = v;
      return this;
    }

    public Builder logitBias(Map<Integer, Double> v) {
      logitBias = v;
      return this;
    }

    public Builder allowedTokenIds(List<Integer> v) {
      allowedTokenIds = v;
      return this;
    }

    public Builder badWords(List<String> v) {
      badWords = v;
      return this;
    }

    public Builder useBeamSearch(boolean v) {
      useBeamSearch = v;
      return this;
    }

    public Builder lengthPenalty(double v) {
      lengthPenalty = v;
      return this;
    }

    public Builder logitsProcessors(List<LogitsProcessorSpec> v) {
      logitsProcessors = v;
      return this;
    }

    public Builder engineXargs(Map<String, Object> v) {
      engineXargs = v;
      return this;
    }

    public Builder structuredOutputs(StructuredOutputsParams v) {
      structuredOutputs = v;
      return this;
    }

    public SamplingParams build() {
      return new SamplingParams(
          n,
          temperature,
          topP,
          topK,
          minP,
          presencePenalty,
          frequencyPenalty,
          repetitionPenalty,
          seed,
          maxTokens,
          minTokens,
          stop,
          stopTokenIds,
          includeStopStrInOutput,
          ignoreEos,
          logprobs,
          promptLogprobs,
          skipSpecialTokens,
          spacesBetweenSpecialTokens,
          logitBias,
          allowedTokenIds,
          badWords,
          useBeamSearch,
          lengthPenalty,
          logitsProcessors,
          engineXargs,
          structuredOutputs);
    }
  }

  /** A custom logits processor: a qualified class name plus constructor arguments. */
  public record LogitsProcessorSpec(String qualname, List<Object> args, Map<String, Object> kwargs)
      implements CborSerializable {
    public LogitsProcessorSpec {
      if (qualname == null || qualname.isBlank())
        throw new IllegalArgumentException("qualname is required");
      args = args == null ? List.of() : List.copyOf(args);
      kwargs = kwargs == null ? Map.of() : Map.copyOf(kwargs);
    }
  }
}
