package dev.troupe.engine;

import java.util.List;
import java.util.Map;

/**
 * A model's chat template, rendered as transformers' {@code apply_chat_template} renders it.
 * Implementations are thread-safe and sandboxed (no Java objects, files or network reachable).
 */
public interface ChatTemplate {

  /**
   * Renders the prompt text; a template error or {@code raise_exception} is a {@link
   * TemplateException}.
   */
  String render(Input input);

  /**
   * The template's inputs, as JSON-like values (String, Number, Boolean, null, List, Map).
   *
   * @param messages conversation messages ({@code role}, {@code content}, {@code tool_calls}, ...)
   * @param tools tool definitions, or null
   * @param documents RAG documents, or null
   * @param addGenerationPrompt append the assistant header
   * @param continueFinalMessage leave the final message open (the model continues it)
   * @param kwargs extra variables ({@code chat_template_kwargs}, e.g. enable_thinking)
   */
  record Input(
      List<Map<String, Object>> messages,
      List<Map<String, Object>> tools,
      List<Map<String, Object>> documents,
      boolean addGenerationPrompt,
      boolean continueFinalMessage,
      Map<String, Object> kwargs) {}

  /** A template that failed to parse or render, or called {@code raise_exception}. */
  class TemplateException extends RuntimeException {
    public TemplateException(String message) {
      super(message);
    }

    public TemplateException(String message, Throwable cause) {
      super(message, cause);
    }
  }
}
