package dev.troupe.engine.input;

import dev.troupe.engine.core.Rejection;
import dev.troupe.engine.tokenizer.TokenizerBundle;
import dev.troupe.protocol.cluster.GenerationRequest;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A request's prompt token ids exactly as a worker's {@link InputProcessor} computes them (the same
 * code: {@code Prompts.promptIds}, with the same template, bound, tokenizer and truncation), for a
 * gateway that routes requests by their cached prefix: it needs the ids before choosing a replica,
 * and then sends them along so the worker does not tokenize again. Needs only the model's tokenizer
 * files, not its weights. Thread-safe.
 *
 * <p>Out-of-vocabulary ids are left to the worker (it knows the model's logits width).
 */
public final class PromptEncoder {
  private final TokenizerBundle text;
  private final boolean allowRequestTemplate;
  private final Map<Integer, Prompts> byContext = new ConcurrentHashMap<>();

  /**
   * @param allowRequestTemplate the workers' {@code allow-request-chat-template}
   */
  public PromptEncoder(TokenizerBundle text, boolean allowRequestTemplate) {
    this.text = text;
    this.allowRequestTemplate = allowRequestTemplate;
  }

  /**
   * The prompt's token ids for a model with context {@code maxModelLen}.
   *
   * @throws Rejection when the worker would refuse the prompt (it then says so itself)
   */
  public int[] encode(GenerationRequest r, int maxModelLen) {
    Prompts prompts =
        byContext.computeIfAbsent(
            maxModelLen,
            len ->
                new Prompts(
                    text, text::compileTemplate, allowRequestTemplate, len, Integer.MAX_VALUE));
    return prompts.promptIds(r, Prompts.Progress.NONE);
  }
}
