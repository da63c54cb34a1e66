package dev.troupe.engine.spi;

import java.util.List;
import java.util.Map;

/**
 * A custom per-choice logits processor, the Java counterpart of vLLM's per-request {@code
 * logits_processors}. A request names one by its class name (or by a constructor object {@code
 * {qualname, args, kwargs}}); the engine loads it only when the class is on the model's allow-list
 * ({@code troupe.worker.logits-processors.allowed}), otherwise the request fails with a 400.
 *
 * <p>Construction: one instance per choice, through a public constructor taking {@link Init} if the
 * class has one, else a public no-argument constructor (then the request may not pass {@code args}
 * or {@code kwargs}). Instances are confined to the engine thread.
 *
 * <p>Place in the chain (as vLLM V1 runs built-in and custom processors): processors that are not
 * {@linkplain #argmaxInvariant() argmax-invariant} run after {@code min_tokens} and {@code
 * logit_bias} and before the repetition/frequency/presence penalties, for greedy and random rows;
 * argmax-invariant ones run only for random rows, after temperature and {@code min_p} and before
 * {@code top_k}/{@code top_p}.
 */
public interface LogitsProcessor {

  /**
   * Modifies {@code logits} (exactly the model's vocabulary size long) in place. Set a logit to
   * {@link Float#NEGATIVE_INFINITY} to forbid a token. Must not keep a reference to the array.
   */
  void apply(Context context, float[] logits);

  /**
   * True when the processor never changes which token has the highest logit (e.g. it only lowers
   * non-maximal logits); such processors are skipped for greedy rows, as in vLLM.
   */
  default boolean argmaxInvariant() {
    return false;
  }

  /**
   * What a processor is constructed with.
   *
   * @param args positional constructor arguments from the request (JSON values)
   * @param kwargs keyword constructor arguments from the request (JSON values)
   * @param engineXargs the request's {@code engine_xargs} (vLLM's {@code vllm_xargs})
   * @param vocabSize length of the logits array
   * @param choiceIndex which of the request's {@code n} choices this instance serves
   */
  record Init(
      List<Object> args,
      Map<String, Object> kwargs,
      Map<String, Object> engineXargs,
      int vocabSize,
      int choiceIndex) {
    public Init {
      args = args == null ? List.of() : List.copyOf(args);
      kwargs = kwargs == null ? Map.of() : Map.copyOf(kwargs);
      engineXargs = engineXargs == null ? Map.of() : Map.copyOf(engineXargs);
      if (vocabSize <= 0) throw new IllegalArgumentException("vocabSize must be positive");
    }
  }

  /** The sequence as it stands at this step (read-only views, valid during {@code apply} only). */
  interface Context {
    int promptLength();

    int promptToken(int index);

    /** Tokens generated so far by this choice. */
    int outputLength();

    int outputToken(int index);

    /** The request's {@code engine_xargs}. */
    Map<String, Object> engineXargs();
  }
}
