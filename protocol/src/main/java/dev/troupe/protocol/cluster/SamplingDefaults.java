package dev.troupe.protocol.cluster;

/**
 * A served model's own sampling defaults, from its {@code generation_config.json}: the worker's
 * input processor uses them for the sampling fields a chat request leaves out (or sends as null),
 * before falling back to OpenAI's defaults, as vLLM does by default ({@code --generation-config
 * auto}); see {@link SamplingParams#withDefaults}. They never leave the worker.
 *
 * <p>Every field is nullable: null means the model has no default for it. Values are the model
 * author's and are not range-checked here; {@link SamplingParams} checks them when it applies them,
 * as if the request had sent them.
 */
public record SamplingDefaults(
    Double temperature,
    Double topP,
    Integer topK,
    Double minP,
    Double repetitionPenalty,
    Double presencePenalty,
    Double frequencyPenalty) {

  /** A model without sampling defaults: OpenAI's apply. */
  public static final SamplingDefaults NONE =
      new SamplingDefaults(null, null, null, null, null, null, null);

  /** True when the model sets no sampling default at all. */
  public boolean isEmpty() {
    return equals(NONE);
  }
}
