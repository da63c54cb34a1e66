package dev.troupe.engine.input;

import dev.troupe.engine.ChatTemplate;
import dev.troupe.engine.Tokenizer;
import dev.troupe.engine.core.Rejection;
import dev.troupe.engine.tokenizer.TokenizerBundle;
import dev.troupe.protocol.cluster.GenerationRequest;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * Conversation to prompt token ids, as vLLM's chat serving prepares them: render the chat template
 * (the request's own when allowed, else the model's), bound the text, tokenize, apply {@code
 * truncate_prompt_tokens}, then check the result against the context length. Errors are 400s with
 * vLLM's wording. Thread-safe (the tokenizer and compiled templates are).
 *
 * <p><b>The prompt bound</b> (checked before tokenizing, so a huge prompt costs a length check, not
 * seconds of tokenizing): no token covers more characters than the longest vocabulary entry ({@code
 * L} UTF-16 units), so a text longer than {@code 4 × L × max_model_len} characters has more tokens
 * than the context and is refused as too long (the factor 4 leaves room for normalizers that
 * compose characters, e.g. NFC's at most 3 → 1). With {@code truncate_prompt_tokens = k} the
 * prompt's head is cut instead: only its last {@code 4 × L × (k + 1024)} characters are tokenized,
 * which hold more than {@code k} tokens, so the kept tail equals that of the whole text unless a
 * tokenizer merge spans more than the 1,024 spare tokens.
 */
final class Prompts {
  /** Spare tokens tokenized beyond a truncation, so the cut never shows in the kept tail. */
  static final int TRUNCATION_SPARE_TOKENS = 1024;

  /** Normalizers may compose up to 3 characters into 1 (NFC, NFKC): the bound allows 4. */
  static final int NORMALIZER_MARGIN = 4;

  private final TokenizerBundle text;
  private final Function<String, ChatTemplate> compiler;
  private final boolean allowRequestTemplate;
  private final int maxModelLen;
  private final int vocabSize;
  private final long longestEntry;

  /**
   * @param compiler compiles a request-supplied template; null when the build has no template
   *     engine for request templates
   * @param vocabSize the model's logits row length (ids at or past it are out of vocabulary)
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
    this.longestEntry = longestEntry(text.tokenizer());
  }

  /** The longest vocabulary entry in UTF-16 units: no token's text is longer. */
  static long longestEntry(Tokenizer tokenizer) {
    long longest = 1;
    for (int id = 0; id < tokenizer.vocabSize(); id++) {
      String entry = tokenizer.idToToken(id);
      if (entry != null) longest = Math.max(longest, entry.length());
    }
    return longest;
  }

  /** Characters beyond which a prompt cannot fit the context ({@code 4 × L × max_model_len}). */
  long maxPromptChars() {
    return NORMALIZER_MARGIN * longestEntry * maxModelLen;
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
      throw Rejection.badRequest(e.getMessage(), requestTemplate != null ? "chat_template" : null);
    }
  }

  private ChatTemplate template(String requestTemplate) {
    if (requestTemplate != null) {
      if (!allowRequestTemplate)
        throw Rejection.badRequest(
            "Chat template is passed with request, but this server does not accept request chat"
                + " templates (troupe.worker.engine.allow-request-chat-template = off).",
            "chat_template");
      if (compiler == null)
        throw Rejection.badRequest(
            "request chat templates are not available in this build", "chat_template");
      try {
        return compiler.apply(requestTemplate);
      } catch (ChatTemplate.TemplateException e) {
        throw Rejection.badRequest("Invalid chat_template: " + e.getMessage(), "chat_template");
      }
    }
    if (text.chatTemplate() == null)
      throw Rejection.badRequest(
          "As of transformers v4.44, default chat template is no longer allowed, so you must"
              + " provide a chat template if the tokenizer does not define one.",
          "chat_template");
    return text.chatTemplate();
  }

  /** What preparing a prompt is doing, so that an unexpected failure can name the right field. */
  interface Progress {
    Progress NONE = (doing, param) -> {};

    void at(String doing, String param);
  }

  /**
   * A request's prompt token ids: its prompt text, or its conversation rendered with the template
   * in force; then bounded, tokenized, truncated and checked. The one implementation of this step:
   * the worker's {@link InputProcessor} and the gateway's routing encoder ({@link PromptEncoder})
   * both call it, so a gateway computes exactly the ids the worker would.
   */
  int[] promptIds(GenerationRequest r, Progress progress) {
    String param = r.prompt() != null ? "prompt" : "messages";
    progress.at("rendering the chat template", "chat_template");
    String rendered =
        r.prompt() != null
            ? r.prompt()
            : render(
                r.messages(),
                r.tools(),
                r.documents(),
                r.addGenerationPrompt(),
                r.continueFinalMessage(),
                r.chatTemplate(),
                r.chatTemplateKwargs(),
                r.reasoningEffort());
    progress.at("tokenizing the prompt", param);
    return promptIds(rendered, r.addSpecialTokens(), r.truncatePromptTokens(), param);
  }

  /**
   * Bounds, tokenizes and truncates; checks emptiness, vocabulary and context length.
   *
   * @param param the request field holding the prompt ({@code messages} or {@code prompt})
   */
  int[] promptIds(
      String prompt, boolean addSpecialTokens, Integer truncatePromptTokens, String param) {
    Integer keep = keep(truncatePromptTokens);
    if (keep != null) {
      long tail = NORMALIZER_MARGIN * longestEntry * ((long) keep + TRUNCATION_SPARE_TOKENS);
      if (prompt.length() > tail) {
        int cut = (int) (prompt.length() - tail);
        if (Character.isLowSurrogate(prompt.charAt(cut))) cut++; // never half a character
        prompt = prompt.substring(cut);
      }
    } else {
      checkLength(prompt, param);
    }
    return checked(text.tokenizer().encode(prompt, addSpecialTokens), keep, param);
  }

  /**
   * Token ids tokenized elsewhere (the gateway, with this template and tokenizer), truncated and
   * checked exactly as {@link #promptIds} treats its own.
   */
  int[] checkedIds(int[] ids, Integer truncatePromptTokens, String param) {
    return checked(ids.clone(), keep(truncatePromptTokens), param);
  }

  /** How many tokens {@code truncate_prompt_tokens} keeps, or null for no truncation. */
  private Integer keep(Integer truncatePromptTokens) {
    if (truncatePromptTokens == null) return null;
    int keep = truncatePromptTokens == -1 ? maxModelLen : truncatePromptTokens;
    if (keep > maxModelLen)
      throw Rejection.badRequest(
          "truncate_prompt_tokens value ("
              + keep
              + ") is greater than max_model_len ("
              + maxModelLen
              + "). Please, select a smaller truncation size.",
          "truncate_prompt_tokens");
    return keep;
  }

  private int[] checked(int[] ids, Integer keep, String param) {
    if (keep != null && ids.length > keep)
      ids = Arrays.copyOfRange(ids, ids.length - keep, ids.length);
    if (ids.length == 0) throw Rejection.badRequest("The decoder prompt cannot be empty", param);
    for (int id : ids)
      if (id < 0 || id >= vocabSize)
        throw Rejection.badRequest("Token id " + id + " is out of vocabulary", param);
    if (ids.length >= maxModelLen)
      throw Rejection.badRequest(
          "This model's maximum context length is "
              + maxModelLen
              + " tokens. However, your request has "
              + ids.length
              + " input tokens. Please reduce the length of the input messages.",
          param);
    return ids;
  }

  /** The prompt bound: a text too long for any prompt of the context is refused untokenized. */
  void checkLength(String prompt, String param) {
    if (prompt.length() > maxPromptChars())
      throw Rejection.badRequest(
          "This model's maximum context length is "
              + maxModelLen
              + " tokens. However, your prompt has "
              + prompt.length()
              + " characters, more than "
              + maxModelLen
              + " tokens of this vocabulary can hold (at most "
              + maxPromptChars()
              + "). Please reduce the length of the input messages.",
          param);
  }
}
