package dev.troupe.engine.core;

import dev.troupe.engine.ChatTemplate;
import dev.troupe.engine.Tokenizer;
import dev.troupe.engine.tokenizer.TokenizerBundle;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * Conversation to prompt token ids, as vLLM's chat serving prepares them: render the chat template
 * (the request's own when allowed, else the model's), tokenize, apply {@code
 * truncate_prompt_tokens}, then check the result against the context length. Errors are 400s with
 * vLLM's wording.
 */
final class Prompts {
  private final TokenizerBundle text;
  private final Function<String, ChatTemplate> compiler;
  private final boolean allowRequestTemplate;
  private final int maxModelLen;
  private final int vocabSize;

  /**
   * @param compiler compiles a request-supplied template; null when the build has no template
   *     engine for request templates
   */
  Prompts(
      TokenizerBundle text,
      Function<String, ChatTemplate> compiler,
      boolean allowRequestTemplate,
      int maxModelLen,
      int vocabSize) {
    this.text = text;
    this.compiler = compiler;
    this.allowRequestTemplate = allowRequestTemplate;
    this.maxModelLen = maxModelLen;
    this.vocabSize = vocabSize;
  }

  Tokenizer tokenizer() {
    return text.tokenizer();
  }

  /** Renders a conversation with the template in force. */
  String render(
      List<Map<String, Object>> messages,
      List<Map<String, Object>> tools,
      List<Map<String, Object>> documents,
      boolean addGenerationPrompt,
      boolean continueFinalMessage,
      String requestTemplate,
      Map<String, Object> templateKwargs,
      String reasoningEffort) {
    ChatTemplate template = template(requestTemplate);
    Map<String, Object> kwargs = new LinkedHashMap<>(text.specialTokens());
    if (reasoningEffort != null) kwargs.put("reasoning_effort", reasoningEffort);
    kwargs.putAll(templateKwargs);
    try {
      return template.render(
          new ChatTemplate.Input(
              messages, tools, documents, addGenerationPrompt, continueFinalMessage, kwargs));
    } catch (ChatTemplate.TemplateException e) {
      // A request's own template is at fault; the model's raises on what the messages hold.
      throw RequestRejected.badRequest(
          e.getMessage(), requestTemplate != null ? "chat_template" : null);
    }
  }

  private ChatTemplate template(String requestTemplate) {
    if (requestTemplate != null) {
      if (!allowRequestTemplate)
        throw RequestRejected.badRequest(
            "Chat template is passed with request, but this server does not accept request chat"
                + " templates (troupe.worker.engine.allow-request-chat-template = off).",
            "chat_template");
      if (compiler == null)
        throw RequestRejected.badRequest(
            "request chat templates are not available in this build", "chat_template");
      try {
        return compiler.apply(requestTemplate);
      } catch (ChatTemplate.TemplateException e) {
        throw RequestRejected.badRequest(
            "Invalid chat_template: " + e.getMessage(), "chat_template");
      }
    }
    if (text.chatTemplate() == null)
      throw RequestRejected.badRequest(
          "As of transformers v4.44, default chat template is no longer allowed, so you must"
              + " provide a chat template if the tokenizer does not define one.",
          "chat_template");
    return text.chatTemplate();
  }

  /** Tokenizes and applies truncation; checks emptiness, vocabulary and context length. */
  int[] promptIds(String prompt, boolean addSpecialTokens, Integer truncatePromptTokens) {
    int[] ids = text.tokenizer().encode(prompt, addSpecialTokens);
    if (truncatePromptTokens != null) {
      int keep = truncatePromptTokens == -1 ? maxModelLen : truncatePromptTokens;
      if (keep > maxModelLen)
        throw RequestRejected.badRequest(
            "truncate_prompt_tokens value ("
                + keep
                + ") is greater than max_model_len ("
                + maxModelLen
                + "). Please, select a smaller truncation size.",
            "truncate_prompt_tokens");
      if (ids.length > keep) ids = Arrays.copyOfRange(ids, ids.length - keep, ids.length);
    }
    if (ids.length == 0)
      throw RequestRejected.badRequest("The decoder prompt cannot be empty", "messages");
    for (int id : ids)
      if (id < 0 || id >= vocabSize)
        throw RequestRejected.badRequest("Token id " + id + " is out of vocabulary", "messages");
    if (ids.length >= maxModelLen)
      throw RequestRejected.badRequest(
          "This model's maximum context length is "
              + maxModelLen
              + " tokens. However, your request has "
              + ids.length
              + " input tokens. Please reduce the length of the input messages.",
          "messages");
    return ids;
  }
}
