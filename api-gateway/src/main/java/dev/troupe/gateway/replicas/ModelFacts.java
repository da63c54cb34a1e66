package dev.troupe.gateway.replicas;

/**
 * What the gateway knows about a served model, from a worker's status: enough to shape-check a
 * request and to list the model. Everything a rule needs beyond this (context length against the
 * prompt, scheduling policy, vocabulary, generation-config defaults) is checked by the worker.
 *
 * @param name the served model name (written into responses)
 * @param maxModelLen context length in tokens (listed by {@code /v1/models})
 * @param multimodal whether the model accepts media parts (images, audio, video); none does yet
 * @param reasoningParser the model's reasoning parser ({@code --reasoning-parser}), or null
 * @param autoToolParser the parser serving {@code tool_choice: "auto"}, or null when the model does
 *     not ({@code --enable-auto-tool-choice} with {@code --tool-call-parser})
 */
public record ModelFacts(
    String name,
    int maxModelLen,
    boolean multimodal,
    String reasoningParser,
    String autoToolParser) {

  /** A model without reasoning or tool-call parsing. */
  public ModelFacts(String name, int maxModelLen, boolean multimodal) {
    this(name, maxModelLen, multimodal, null, null);
  }

  public ModelFacts {
    if (name == null || name.isBlank()) throw new IllegalArgumentException("name is required");
    if (maxModelLen < 1) throw new IllegalArgumentException("maxModelLen must be positive");
  }
}
