package dev.troupe.engine.reasoning;

import dev.troupe.engine.Tokenizer;
import java.util.Map;

/**
 * Splits a choice's output into reasoning and content ({@code message.reasoning_content} / {@code
 * message.content}), as vLLM's {@code --reasoning-parser} does, for models that wrap their thinking
 * in {@code <think>…</think>}. Pure and streaming-capable: {@link #open} gives one {@link Session}
 * per choice, fed the generated text (and token ids) as it arrives.
 *
 * <p>Where the output starts is decided from the end of the prompt (after its last special token):
 * a {@code <think>} there means the template opened the reasoning (Qwen3-Thinking-2507, Qwen3.5,
 * DeepSeek-R1), a {@code </think>} there (or {@code enable_thinking: false}) means it was closed
 * (Qwen3 with thinking disabled); otherwise the parser's default applies: {@code qwen3} treats the
 * output as reasoning only if it starts with {@code <think>}, {@code deepseek_r1} always starts in
 * reasoning (R1 may or may not print the start tag).
 */
public interface ReasoningParser {

  /** The {@code --reasoning-parser} name. */
  String name();

  /**
   * A session for one choice.
   *
   * @param promptIds the prompt's token ids (to see whether the template opened or closed a
   *     reasoning block)
   * @param chatTemplateKwargs the request's template kwargs ({@code enable_thinking})
   */
  Session open(int[] promptIds, Map<String, Object> chatTemplateKwargs);

  /** Reasoning and content of a whole output (the non-streaming split). */
  default Split split(String output, int[] promptIds, Map<String, Object> chatTemplateKwargs) {
    Session s = open(promptIds, chatTemplateKwargs);
    Delta a = s.onText(output);
    Delta b = s.finish();
    return s.result(a, b);
  }

  /** Where one choice is: in reasoning, in content, or not yet known (its first token decides). */
  enum Phase {
    UNDECIDED,
    REASONING,
    CONTENT
  }

  /**
   * One choice's split. Token-level ({@link #onToken}, {@link #phase}) for the engine, which masks
   * with a structured-output grammar only in {@code CONTENT}; text-level ({@link #onText}) for the
   * response. Not thread-safe.
   */
  interface Session {

    /** The phase the next generated token belongs to. */
    Phase phase();

    /** Records a generated token id (the start/end tags move the phase). */
    void onToken(int tokenId);

    /**
     * The token that, generated first, makes an undecided output a reasoning one ({@code <think>}),
     * or -1; a constrained engine allows it next to the grammar's tokens while {@link #phase} is
     * undecided.
     */
    int startTokenId();

    /**
     * The token that ends the reasoning ({@code </think>}), or -1; a constrained engine generates
     * it when the budget has just room left for the constrained content.
     */
    default int endTokenId() {
      return -1;
    }

    /** Splits newly generated text; text that may still be part of a tag is held back. */
    Delta onText(String text);

    /** Releases what was held back at the end of the output. */
    Delta finish();

    /** Whether the output ever entered reasoning (so reasoning is "" rather than null). */
    boolean sawReasoning();

    /** The phase of the text split so far ({@link #onText}), which the token phase may lead. */
    default Phase textPhase() {
      return phase();
    }

    /** Folds the deltas of a whole output into vLLM's non-streaming pair. */
    default Split result(Delta... deltas) {
      StringBuilder r = new StringBuilder();
      StringBuilder c = new StringBuilder();
      for (Delta d : deltas) {
        if (d.reasoning() != null) r.append(d.reasoning());
        if (d.content() != null) c.append(d.content());
      }
      return new Split(sawReasoning() ? r.toString() : null, c.length() == 0 ? null : c.toString());
    }
  }

  /** Text of one step: reasoning part and content part (either may be empty). */
  record Delta(String reasoning, String content) {
    public static final Delta EMPTY = new Delta("", "");

    public Delta {
      reasoning = reasoning == null ? "" : reasoning;
      content = content == null ? "" : content;
    }

    public boolean isEmpty() {
      return reasoning.isEmpty() && content.isEmpty();
    }
  }

  /** A whole output split: null where the part is absent, as in vLLM's response. */
  record Split(String reasoning, String content) {}

  /**
   * The parser registered under {@code name} for a tokenizer.
   *
   * @throws IllegalArgumentException for an unknown name or a tokenizer without the tags
   */
  static ReasoningParser named(String name, Tokenizer tokenizer) {
    return switch (name) {
      case "qwen3" -> ThinkTagParser.create(name, tokenizer, false);
      case "deepseek_r1" -> ThinkTagParser.create(name, tokenizer, true);
      default ->
          throw new IllegalArgumentException(
              "unknown reasoning parser '" + name + "' (known: qwen3, deepseek_r1)");
    };
  }
}
