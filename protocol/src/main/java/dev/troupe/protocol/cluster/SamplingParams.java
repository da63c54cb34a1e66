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
 * @param maxTokens maximum generated tokens per choice (already capped by the context length)
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
   * Plain defaults (OpenAI's): temperature 1, everything else off, for {@code maxTokens} tokens.
   */
  public static SamplingParams defaults(int maxTokens) {
    return new SamplingParams(
        1, 1.0, 1.0, 0, 0.0, 0.0, 0.0, 1.0, null, maxTokens, 0, List.of(), List.of(), false, false,
        null, null, true, true, Map.of(), null, List.of(), false, 1.0, List.of(), Map.of());
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
