package dev.troupe.engine.template;

import dev.troupe.engine.ChatTemplate;
import java.time.Clock;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A model's chat template(s) from {@code tokenizer_config.json}, rendered as transformers' {@code
 * apply_chat_template(..., tokenize=False)}: variables are the tokenizer's special tokens, then
 * {@code chat_template_kwargs}, then {@code messages}, {@code tools}, {@code documents} (None when
 * absent) and {@code add_generation_prompt}; with several named templates, {@code tool_use} is
 * chosen when tools are given, else {@code default}; {@code continue_final_message} cuts the
 * rendering right after the final message's content.
 *
 * <p>A template that fails to compile is reported on every render (the model still loads and serves
 * plain completions). Immutable and thread-safe.
 */
public final class JinjaChatTemplate implements ChatTemplate {
  private final Map<String, Compiled> templates;
  private final Map<String, Object> specialTokens;

  private record Compiled(JinjaTemplate template, TemplateException error) {
    static Compiled of(String source) {
      try {
        return new Compiled(JinjaTemplate.compile(source), null);
      } catch (TemplateException e) {
        return new Compiled(null, e);
      }
    }

    JinjaTemplate get() {
      if (error != null)
        throw new TemplateException("chat template does not compile: " + error.getMessage(), error);
      return template;
    }
  }

  private JinjaChatTemplate(Map<String, Compiled> templates, Map<String, Object> specialTokens) {
    this.templates = templates;
    this.specialTokens = Collections.unmodifiableMap(new LinkedHashMap<>(specialTokens));
  }

  /** One template (a {@code chat_template} string, or a per-request template). */
  public static JinjaChatTemplate of(String source, Map<String, Object> specialTokens) {
    return new JinjaChatTemplate(Map.of("", Compiled.of(source)), specialTokens);
  }

  /** Named templates ({@code chat_template} as a list of {@code {name, template}}). */
  public static JinjaChatTemplate of(Map<String, String> named, Map<String, Object> specialTokens) {
    if (named.isEmpty()) throw new IllegalArgumentException("no templates");
    Map<String, Compiled> compiled = new HashMap<>();
    named.forEach((name, source) -> compiled.put(name, Compiled.of(source)));
    return new JinjaChatTemplate(compiled, specialTokens);
  }

  /** This template with {@code strftime_now} reading the given clock. */
  public JinjaChatTemplate withClock(Clock clock) {
    Map<String, Compiled> out = new HashMap<>();
    templates.forEach(
        (name, c) ->
            out.put(
                name, c.error() != null ? c : new Compiled(c.template().withClock(clock), null)));
    return new JinjaChatTemplate(out, specialTokens);
  }

  /** The compile error of the template a render would use, or null when it compiled. */
  public TemplateException compileError(boolean withTools) {
    return select(withTools).error();
  }

  @Override
  public String render(Input input) {
    if (input.continueFinalMessage() && input.addGenerationPrompt())
      throw new TemplateException(
          "continue_final_message and add_generation_prompt are not compatible. Use"
              + " continue_final_message when you want the model to continue the final message, and"
              + " add_generation_prompt when you want to add a header that will prompt it to start"
              + " a new assistant message instead.");
    if (input.messages() == null) throw new TemplateException("messages are required");
    JinjaTemplate template = select(input.tools() != null).get();
    Map<String, Object> vars = new LinkedHashMap<>(specialTokens);
    if (input.kwargs() != null) vars.putAll(input.kwargs());
    vars.put("messages", input.messages());
    vars.put("tools", input.tools());
    vars.put("documents", input.documents());
    vars.put("add_generation_prompt", input.addGenerationPrompt());
    String rendered = template.render(vars);
    return input.continueFinalMessage()
        ? cutAfterFinalMessage(rendered, input.messages())
        : rendered;
  }

  private Compiled select(boolean withTools) {
    if (templates.size() == 1 && templates.containsKey("")) return templates.get("");
    if (withTools && templates.containsKey("tool_use")) return templates.get("tool_use");
    if (templates.containsKey("default")) return templates.get("default");
    throw new TemplateException(
        "this model has several chat templates "
            + templates.keySet()
            + " and none named 'default'");
  }

  /** transformers' continue_final_message: keep everything up to the final message's text. */
  static String cutAfterFinalMessage(String rendered, List<Map<String, Object>> messages) {
    if (messages.isEmpty())
      throw new TemplateException("continue_final_message needs a final message");
    Object content = messages.get(messages.size() - 1).get("content");
    String finalMessage = null;
    if (content instanceof String s) {
      finalMessage = s;
    } else if (content instanceof List<?> blocks) {
      for (int i = blocks.size() - 1; i >= 0; i--) {
        if (blocks.get(i) instanceof Map<?, ?> block && block.get("text") instanceof String text) {
          finalMessage = text;
          break;
        }
      }
      if (finalMessage == null)
        throw new TemplateException(
            "continue_final_message is set but we could not find any text to continue in the final"
                + " message!");
    } else {
      throw new TemplateException(
          "continue_final_message is set but the final message has no text content");
    }
    Budget budget = new Budget(TemplateLimits.DEFAULT);
    String stripped = StringMethods.strip(finalMessage, null, true, true, budget);
    int loc = rendered.lastIndexOf(stripped);
    if (loc < 0)
      throw new TemplateException(
          "continue_final_message is set but the final message does not appear in the chat after"
              + " applying the chat template! This can happen if the chat template deletes portions"
              + " of the final message.");
    String lstripped = StringMethods.strip(finalMessage, null, true, false, budget);
    int end = loc + lstripped.length();
    if (end <= rendered.length() && rendered.substring(loc, end).equals(finalMessage))
      return rendered.substring(0, end);
    return rendered.substring(0, loc + stripped.length());
  }
}
