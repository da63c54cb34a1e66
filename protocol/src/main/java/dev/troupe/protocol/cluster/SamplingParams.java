package dev.troupe.protocol.cluster;

import dev.troupe.protocol.CborSerializable;
import java.util.List;
import java.util.Map;

/**
 * Everything the engine needs to turn logits into tokens and decide when to stop, with every
 * default already applied (by the gateway's request mapper, vLLM's {@code to_sampling_params}).
 * Engine-side vocabulary: no OpenAI field names, no nullable "use default" values except where
 * noted.
 *
 * @param n number of choices (beam width when {@code useBeamSearch})
 * @param temperature 0 (or below 1e-5) means greedy
 * @param topP in (0, 1]; 1 = off
 * @param topK 0 or -1 = off
 * @param minP in [0, 1]; 0 = off
 * @param presencePenalty over output tokens, in [-2, 2]
 * @param frequencyPenalty over output tokens, in [-2, 2]
 * @param repetitionPenalty over prompt and output tokens, > 0; 1 = off
 * @param seed per-request RNG seed, null = unseeded; choice i uses seed + i
 * @param maxTokens maximum generated tokens per choice; {@link #MAX_TOKENS_UNSET} = up to the
 *     context (the worker caps it)
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
 * @param allowedTokenIds null = all tokens allowed
 * @param badWords words never to generate (tokenized by the worker, with and without a leading
 *     space)
 * @param useBeamSearch beam search of width {@code n}
 * @param lengthPenalty beam score = cumulative logprob / length^lengthPenalty
 * @param logitsProcessors custom processors, by qualified class name and constructor arguments
 * @param engineXargs free-form extension arguments handed to logits processors
 */
public record SamplingParams(
    int n,
    double temperature,
    double topP,
    int topK,
    double minP,
    double presencePenalty,
    double frequencyPenalty,
    double repetitionPenalty,
    Long seed,
    int maxTokens,
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
    Map<String, Object> engineXargs)
    implements CborSerializable {

  /** Below this temperature sampling is greedy, as in vLLM. */
  public static final double GREEDY_EPSILON = 1e-5;

  public SamplingParams {
    if (n < 1) throw new IllegalArgumentException("n must be at least 1, got " + n);
    if (maxTokens < 0) throw new IllegalArgumentException("maxTokens must be >= 0");
    stop = stop == null ? List.of() : List.copyOf(stop);
    stopTokenIds = stopTokenIds == null ? List.of() : List.copyOf(stopTokenIds);
    logitBias = logitBias == null ? Map.of() : Map.copyOf(logitBias);
    allowedTokenIds = allowedTokenIds == null ? null : List.copyOf(allowedTokenIds);
    badWords = badWords == null ? List.of() : List.copyOf(badWords);
    logitsProcessors = logitsProcessors == null ? List.of() : List.copyOf(logitsProcessors);
    engineXargs = engineXargs == null ? Map.of() : Map.copyOf(engineXargs);
  }

  /** Greedy decoding: argmax of the processed logits. */
  public boolean greedy() {
    return temperature < GREEDY_EPSILON;
  }

  /**
   * {@code maxTokens} when the client set no {@code max_tokens}: the worker, which knows the prompt
   * length, generates up to the context length (vLLM's default). An explicit value that does not
   * fit beside the prompt is a 400 naming {@code max_tokens}.
   */
  public static final int MAX_TOKENS_UNSET = Integer.MAX_VALUE;

  /** A builder starting from OpenAI's defaults: one choice, temperature 1, up to the context. */
  public static Builder builder() {
    return new Builder();
  }

  /** A builder holding this record's values. */
  public Builder toBuilder() {
    return new Builder(this);
  }

  /** A copy with another {@code maxTokens}. */
  public SamplingParams withMaxTokens(int newMaxTokens) {
    return toBuilder().maxTokens(newMaxTokens).build();
  }

  /**
   * Builds {@link SamplingParams} by name, so that a new field touches only this record, the
   * gateway's mapper and the engine code that reads it. Starts from OpenAI's defaults.
   */
  public static final class Builder {
    private int n = 1;
    private double temperature = 1.0;
    private double topP = 1.0;
    private int topK = 0;
    private double minP = 0.0;
    private double presencePenalty = 0.0;
    private double frequencyPenalty = 0.0;
    private double repetitionPenalty = 1.0;
    private Long seed;
    private int maxTokens = MAX_TOKENS_UNSET;
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
    }

    public Builder n(int v) {
      n = v;
      return this;
    }

    public Builder temperature(double v) {
      temperature = v;
      return this;
    }

    public Builder topP(double v) {
      topP = v;
      return this;
    }

    public Builder topK(int v) {
      topK = v;
      return this;
    }

    public Builder minP(double v) {
      minP = v;
      return this;
    }

    public Builder presencePenalty(double v) {
      presencePenalty = v;
      return this;
    }

    public Builder frequencyPenalty(double v) {
      frequencyPenalty = v;
      return this;
    }

    public Builder repetitionPenalty(double v) {
      repetitionPenalty = v;
      return this;
    }

    public Builder seed(Long v) {
      seed = v;
      return this;
    }

    public Builder maxTokens(int v) {
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
          engineXargs);
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
