package dev.troupe.gateway.chat;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.gateway.http.ApiException;
import dev.troupe.gateway.replicas.ModelFacts;
import dev.troupe.gateway.structured.ConstraintMapper;
import dev.troupe.protocol.Json;
import dev.troupe.protocol.api.chat.ChatCompletionRequest;
import dev.troupe.protocol.api.chat.ChatCompletionRequest.StreamOptions;
import dev.troupe.protocol.api.chat.ChatCompletionRequest.Tool;
import dev.troupe.protocol.cluster.GenerationRequest;
import dev.troupe.protocol.cluster.RequestLimits;
import dev.troupe.protocol.cluster.SamplingParams;
import dev.troupe.protocol.cluster.ToolCalling;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The one converter from the OpenAI vocabulary to the engine's: {@link ChatCompletionRequest} →
 * {@link GenerationRequest} + {@link SamplingParams}, applying the shape and range rules and the
 * cross-field rules of vLLM's request model and {@code to_sampling_params} (v0.11-era, with later
 * fixes that turn 500s into 400s). Every refusal is a 400 {@link ApiException} naming the
 * parameter. This class holds the request-model rules (messages, stream and logprob options,
 * template, tools, structured outputs, ids; those it shares with {@code /v1/completions} are {@link
 * RequestChecks}') and builds the {@link GenerationRequest}; the sampling fields are {@link
 * ChatSamplingMapper}'s. Rules that need the model are the worker's input processor's (its context
 * length, vocabulary, scheduling policy, generation-config defaults; docs/architecture.md lists
 * every rule with its owner): sampling fields the client left out stay null here.
 *
 * <p>Pure and thread-safe: no I/O, no state.
 */
public final class ChatRequestMapper {
  private static final Set<String> REASONING_EFFORTS = Set.of("low", "medium", "high");
  private static final Set<String> MEDIA_PART_TYPES =
      Set.of(
          "image_url",
          "image",
          "image_pil",
          "image_embeds",
          "input_audio",
          "audio_url",
          "video_url",
          "video");
  private static final TypeReference<Map<String, Object>> JSON_OBJECT = new TypeReference<>() {};

  private ChatRequestMapper() {}

  /**
   * Validates {@code r} and converts it.
   *
   * @param model facts of the served model the request resolved to
   * @param headerRequestId the {@code X-Request-Id} header, which wins over the body's request_id
   */
  public static ChatPlan map(
      ChatCompletionRequest r, ModelFacts model, Optional<String> headerRequestId) {
    List<Map<String, Object>> messages = checkMessages(r.messages(), model);
    boolean stream = isTrue(r.stream());

    // --- request-model validators (vLLM runs these before anything else)
    StreamOptions options = r.streamOptions();
    RequestChecks.streamOptions(options, stream);
    Integer promptLogprobs = RequestChecks.promptLogprobs(r.promptLogprobs(), stream);
    boolean logprobs = isTrue(r.logprobs());
    Integer topLogprobs = r.topLogprobs();
    if (topLogprobs != null) {
      if (topLogprobs < -1)
        throw bad("`top_logprobs` must be a positive value or -1.", "top_logprobs");
      if ((topLogprobs > 0 || topLogprobs == -1) && !logprobs)
        throw bad("when using `top_logprobs`, `logprobs` must be set to true.", "top_logprobs");
    }
    RequestChecks.structuredOutputs(r.structuredOutputs());
    checkTools(r.tools(), r.toolChoice());

    boolean addGenerationPrompt = r.addGenerationPrompt() == null || r.addGenerationPrompt();
    boolean continueFinal = isTrue(r.continueFinalMessage());
    if (continueFinal && addGenerationPrompt)
      throw bad(
          "Cannot set both `continue_final_message` and `add_generation_prompt` to True. "
              + "Send `add_generation_prompt: false` with `continue_final_message: true`.",
          "continue_final_message");

    String cacheSalt = RequestChecks.cacheSalt(r.cacheSalt());
    var kvTransfer = KvTransferParams.parse(r.kvTransferParams(), stream);
    Long seed = RequestChecks.seed(r.seed());
    Integer truncate = RequestChecks.truncatePromptTokens(r.truncatePromptTokens());
    RequestChecks.responseFormat(r.responseFormat());
    if (r.reasoningEffort() != null && !REASONING_EFFORTS.contains(r.reasoningEffort()))
      throw bad(
          "Input should be 'low', 'medium' or 'high', got '" + r.reasoningEffort() + "'.",
          "reasoning_effort");
    Map<String, Object> templateKwargs = checkTemplateKwargs(r.chatTemplateKwargs());
    if (r.mmProcessorKwargs() != null && !r.mmProcessorKwargs().isEmpty() && !model.multimodal())
      throw bad(
          "Model `"
              + model.name()
              + "` is text-only: `mm_processor_kwargs` asks for multimodal "
              + "processing, which it cannot do.",
          "mm_processor_kwargs");
    // Whether the model schedules by priority is the worker's rule (it knows its policy).
    int priority = r.priority() == null ? 0 : r.priority();

    // --- sampling parameters (vLLM's to_sampling_params + SamplingParams verification)
    // vLLM: echo without prompt_logprobs asks for prompt logprobs of top_logprobs alternatives.
    Integer promptAsked = promptLogprobs;
    if (promptAsked == null && isTrue(r.echo()))
      promptAsked = topLogprobs == null ? 0 : Math.max(topLogprobs, 0);
    // max_completion_tokens wins over the deprecated max_tokens.
    boolean completion = r.maxCompletionTokens() != null;
    SamplingParams sampling =
        ChatSamplingMapper.map(
            r,
            seed,
            logprobs,
            topLogprobs,
            promptAsked,
            completion ? r.maxCompletionTokens() : r.maxTokens(),
            completion ? "max_completion_tokens" : "max_tokens");
    // --- structured outputs, response_format and tool choice: one constraint, one tool mode
    ConstraintMapper.Result constraint =
        ConstraintMapper.map(r, model.autoToolParser(), sampling.useBeamSearch());
    if (constraint.constraint() != null)
      sampling = sampling.toBuilder().structuredOutputs(constraint.constraint()).build();

    // --- ids: header beats body, the engine id gets a suffix so equal client ids never collide
    String id = RequestChecks.requestId(headerRequestId, r.requestId());
    String engineId = RequestChecks.engineId(id);

    List<Map<String, Object>> tools =
        r.tools() == null
            ? null
            : r.tools().stream().map(t -> Json.mapper().convertValue(t, JSON_OBJECT)).toList();
    if (r.documents() != null) {
      limit(r.documents().size(), RequestLimits.DOCUMENTS, "documents", "documents");
      if (r.documents().contains(null)) throw bad("Each document must be an object.", "documents");
    }

    GenerationRequest generation =
        GenerationRequest.builder(engineId)
            .messages(messages)
            .tools(tools)
            .documents(r.documents())
            .addGenerationPrompt(addGenerationPrompt)
            .continueFinalMessage(continueFinal)
            .addSpecialTokens(isTrue(r.addSpecialTokens()))
            .chatTemplate(r.chatTemplate())
            .chatTemplateKwargs(templateKwargs)
            .reasoningEffort(r.reasoningEffort())
            .truncatePromptTokens(truncate)
            .priority(priority)
            .cacheSalt(cacheSalt)
            .sampling(sampling)
            .returnTokenIds(isTrue(r.returnTokenIds()))
            .returnTokensAsTokenIds(isTrue(r.returnTokensAsTokenIds()))
            .toolCalling(constraint.toolCalling())
            .streamed(stream)
            .kvTransfer(kvTransfer)
            .build();

    Map<String, Object> last = messages.get(messages.size() - 1);
    String responseRole = addGenerationPrompt ? "assistant" : String.valueOf(last.get("role"));
    String echoText = null;
    if (isTrue(r.echo()) && responseRole.equals(last.get("role"))) {
      String text = contentText(last.get("content"));
      if (text != null && !text.isEmpty()) echoText = text;
    }
    boolean includeUsage = RequestChecks.includeUsage(options, stream);
    boolean continuous = includeUsage && isTrue(options.continuousUsageStats());
    return new ChatPlan(
        generation,
        "chatcmpl-" + id,
        model.name(),
        responseRole,
        echoText,
        stream,
        includeUsage,
        continuous,
        logprobs,
        sampling.logprobs() == null ? 0 : sampling.logprobs(),
        sampling.promptLogprobs() != null,
        isTrue(r.returnTokenIds()),
        r.includeReasoning() == null || r.includeReasoning(),
        null,
        model.reasoningParser() != null || constraint.toolCalling().mode() != ToolCalling.Mode.NONE,
        constraint.toolCalling().mode());
  }

  // ------------------------------------------------------------------ messages

  private static List<Map<String, Object>> checkMessages(
      List<Map<String, Object>> messages, ModelFacts model) {
    if (messages == null) throw bad("Field required: `messages`.", "messages");
    if (messages.isEmpty()) throw bad("`messages` must contain at least one message.", "messages");
    limit(messages.size(), RequestLimits.MESSAGES, "messages", "messages");
    for (int i = 0; i < messages.size(); i++) {
      Map<String, Object> m = messages.get(i);
      String at = "messages[" + i + "]";
      if (m == null) throw bad("Each message must be an object.", at);
      if (!(m.get("role") instanceof String role) || role.isBlank())
        throw bad("Each message needs a `role` string.", at + ".role");
      Object content = m.get("content");
      if (content == null || content instanceof String) continue;
      if (!(content instanceof List<?> parts))
        throw bad("`content` must be a string or a list of content parts.", at + ".content");
      limit(parts.size(), RequestLimits.CONTENT_PARTS, at + ".content", "parts");
      for (int p = 0; p < parts.size(); p++) {
        String partAt = at + ".content[" + p + "]";
        if (!(parts.get(p) instanceof Map<?, ?> part) || !(part.get("type") instanceof String type))
          throw bad("Each content part must be an object with a `type`.", partAt);
        if (MEDIA_PART_TYPES.contains(type) && !model.multimodal())
          throw bad(
              "Model `" + model.name() + "` is text-only and cannot take `" + type + "` content.",
              partAt + ".type");
      }
    }
    return messages;
  }

  /** A message's content as text: a string, or the text parts of a list joined with newlines. */
  static String contentText(Object content) {
    if (content instanceof String s) return s;
    if (!(content instanceof List<?> parts)) return null;
    List<String> texts = new ArrayList<>();
    for (Object p : parts)
      if (p instanceof Map<?, ?> part && part.get("text") instanceof String text) texts.add(text);
    return String.join("\n", texts);
  }

  // ------------------------------------------------------------------ field checks

  private static void checkTools(List<Tool> tools, JsonNode toolChoice) {
    if (tools != null) {
      limit(tools.size(), RequestLimits.TOOLS, "tools", "tools");
      for (int i = 0; i < tools.size(); i++) {
        Tool t = tools.get(i);
        if (t == null) throw bad("Each tool must be an object.", "tools[" + i + "]");
        if (!"function".equals(t.type()))
          throw bad("Input should be 'function', got '" + t.type() + "'.", "tools[" + i + "].type");
        if (t.function() == null || t.function().name() == null || t.function().name().isBlank())
          throw bad("Field required: `function.name`.", "tools[" + i + "].function.name");
      }
    }
    // tool_choice itself: ConstraintMapper (with the model's auto tool parser)
  }

  /**
   * {@code chat_template_kwargs} may not hold {@code tokenize} or {@code chat_template} (vLLM's
   * reserved names); also used by {@code /tokenize}.
   */
  public static Map<String, Object> checkTemplateKwargs(Map<String, Object> kwargs) {
    if (kwargs == null) return Map.of();
    List<String> reserved =
        kwargs.keySet().stream()
            .filter(k -> k.equals("tokenize") || k.equals("chat_template"))
            .toList();
    if (!reserved.isEmpty())
      throw bad(
          "Found unexpected chat template kwargs from request: " + reserved,
          "chat_template_kwargs");
    return kwargs;
  }

  private static boolean isTrue(Boolean b) {
    return b != null && b;
  }

  /** A 400 naming {@code field} when {@code size} is over its {@link RequestLimits} bound. */
  public static void limit(long size, int max, String field, String unit) {
    if (size > max) throw bad(RequestLimits.tooMany(field, size, max, unit), field);
  }

  private static ApiException bad(String message, String param) {
    return ApiException.badRequest(message, param);
  }
}
