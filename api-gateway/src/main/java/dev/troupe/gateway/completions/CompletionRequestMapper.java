package dev.troupe.gateway.completions;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.gateway.chat.ChatRequestMapper;
import dev.troupe.gateway.chat.ChatSamplingMapper;
import dev.troupe.gateway.chat.KvTransferParams;
import dev.troupe.gateway.chat.RequestChecks;
import dev.troupe.gateway.completions.CompletionPlan.Prompt;
import dev.troupe.gateway.http.ApiException;
import dev.troupe.gateway.replicas.ModelFacts;
import dev.troupe.gateway.structured.ConstraintMapper;
import dev.troupe.protocol.api.completions.CompletionRequest;
import dev.troupe.protocol.cluster.GenerationRequest;
import dev.troupe.protocol.cluster.RequestLimits;
import dev.troupe.protocol.cluster.SamplingParams;
import dev.troupe.protocol.cluster.StructuredOutputsParams;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * {@link CompletionRequest} → {@link CompletionPlan}: vLLM's completions request model and {@code
 * to_sampling_params}, through the same checks and sampling mapper as chat ({@link RequestChecks},
 * {@link ChatSamplingMapper}, {@link ConstraintMapper}); what differs is the API's own: {@code
 * prompt} in four shapes (one generation per prompt), {@code logprobs} as a count, {@code
 * max_tokens} 16 by default, {@code echo} of the prompt, {@code add_special_tokens} on by default,
 * and the refused {@code suffix}, {@code prompt_embeds} and {@code best_of}. The prompts are
 * bounded as the chat's lists are ({@link RequestLimits}: their number, the ids of a token-id
 * prompt). Every refusal is a 400 naming the field.
 *
 * <p>Pure and thread-safe.
 */
public final class CompletionRequestMapper {
  /** vLLM's default {@code max_tokens} for completions. */
  static final int DEFAULT_MAX_TOKENS = 16;

  private CompletionRequestMapper() {}

  /**
   * @param model facts of the served model the request resolved to
   * @param headerRequestId the {@code X-Request-Id} header, which wins over the body's request_id
   */
  public static CompletionPlan map(
      CompletionRequest r, ModelFacts model, Optional<String> headerRequestId) {
    if (r.promptEmbeds() != null && !r.promptEmbeds().isNull())
      throw bad(
          "`prompt_embeds` is not supported: send the prompt as text or token ids.",
          "prompt_embeds");
    List<Object> prompts = prompts(r.prompt());
    boolean stream = isTrue(r.stream());
    RequestChecks.streamOptions(r.streamOptions(), stream);
    Integer promptLogprobs = RequestChecks.promptLogprobs(r.promptLogprobs(), stream);
    Integer logprobs = r.logprobs();
    if (logprobs != null && logprobs < 0)
      throw bad("`logprobs` must be a positive value.", "logprobs");
    if (logprobs != null && logprobs > ChatSamplingMapper.MAX_LOGPROBS)
      throw bad(
          "Requested sample logprobs of "
              + logprobs
              + ", which is greater than max allowed: "
              + ChatSamplingMapper.MAX_LOGPROBS,
          "logprobs");
    RequestChecks.structuredOutputs(r.structuredOutputs());
    RequestChecks.responseFormat(r.responseFormat());
    if (r.suffix() != null) throw bad("suffix is not currently supported", "suffix");
    int n = r.n() == null ? 1 : r.n();
    if (r.bestOf() != null && r.bestOf() != n)
      throw bad(
          "best_of is not supported (vLLM's V1 engine has none): ask for n choices instead.",
          "best_of");
    if ((long) n * prompts.size() > ChatSamplingMapper.MAX_N)
      throw bad(
          "n × the number of prompts must be at most " + ChatSamplingMapper.MAX_N + ".", "prompt");
    String cacheSalt = RequestChecks.cacheSalt(r.cacheSalt());
    var kvTransfer = KvTransferParams.parse(r.kvTransferParams(), stream);
    if (kvTransfer != null && prompts.size() > 1)
      throw bad(
          "kv_transfer_params hands one prompt's KV blocks over: send one prompt per request.",
          "kv_transfer_params");
    Long seed = RequestChecks.seed(r.seed());
    Integer truncate = RequestChecks.truncatePromptTokens(r.truncatePromptTokens());
    int priority = r.priority() == null ? 0 : r.priority();

    // --- sampling: vLLM's to_sampling_params for completions
    boolean echo = isTrue(r.echo());
    // echo with max_tokens 0 shows the prompt alone; the engine still generates one token
    boolean echoOnly = echo && r.maxTokens() != null && r.maxTokens() == 0;
    Integer maxTokens = echoOnly ? 1 : r.maxTokens() == null ? DEFAULT_MAX_TOKENS : r.maxTokens();
    Integer promptAsked = promptLogprobs == null && echo ? logprobs : promptLogprobs;
    boolean beam = isTrue(r.useBeamSearch());
    StructuredOutputsParams constraint =
        ConstraintMapper.map(r.structuredOutputs(), r.responseFormat(), beam);
    SamplingParams sampling =
        ChatSamplingMapper.map(
            r, seed, logprobs != null, logprobs, promptAsked, maxTokens, "max_tokens");
    if (constraint != null) sampling = sampling.toBuilder().structuredOutputs(constraint).build();

    // --- one generation per prompt; the engine ids get the prompt's index, as vLLM's
    String id = RequestChecks.requestId(headerRequestId, r.requestId());
    String engineId = RequestChecks.engineId(id);
    boolean returnTokenIds = isTrue(r.returnTokenIds());
    boolean asTokenIds = isTrue(r.returnTokensAsTokenIds());
    List<Prompt> plan = new ArrayList<>(prompts.size());
    for (int i = 0; i < prompts.size(); i++) {
      Object p = prompts.get(i);
      @SuppressWarnings("unchecked")
      List<Integer> ids = p instanceof List<?> l ? (List<Integer>) l : null;
      GenerationRequest generation =
          GenerationRequest.builder(engineId + "-" + i)
              // token ids travel as the prompt's ids (checked by the worker: vocabulary, length)
              .prompt(ids == null ? (String) p : "")
              .promptTokenIds(ids)
              .addSpecialTokens(r.addSpecialTokens() == null || r.addSpecialTokens())
              .truncatePromptTokens(truncate)
              .priority(priority)
              .cacheSalt(cacheSalt)
              .sampling(sampling)
              // echoed logprobs need the prompt's ids
              .returnTokenIds(returnTokenIds || (echo && logprobs != null))
              .returnTokensAsTokenIds(asTokenIds)
              .streamed(stream)
              .kvTransfer(kvTransfer)
              .build();
      plan.add(new Prompt(generation, ids == null ? (String) p : null, ids));
    }
    boolean includeUsage = RequestChecks.includeUsage(r.streamOptions(), stream);
    return new CompletionPlan(
        plan,
        "cmpl-" + id,
        model.name(),
        n,
        echo,
        echoOnly,
        stream,
        stream && beam,
        includeUsage,
        includeUsage && isTrue(r.streamOptions().continuousUsageStats()),
        logprobs,
        returnTokenIds,
        asTokenIds,
        null);
  }

  /**
   * The prompts: each a String, or a List of token ids. {@code prompt} is a string, a list of
   * strings, a list of token ids, or a list of lists of token ids.
   */
  static List<Object> prompts(JsonNode prompt) {
    if (prompt == null || prompt.isNull() || (prompt.isTextual() && prompt.asText().isEmpty()))
      throw bad("Either prompt or prompt_embeds must be provided and non-empty.", "prompt");
    if (prompt.isTextual()) return List.of(prompt.asText());
    if (!prompt.isArray()) throw shape("prompt");
    if (prompt.isEmpty()) throw bad("`prompt` must not be an empty list.", "prompt");
    JsonNode head = prompt.get(0);
    List<Object> out = new ArrayList<>(prompt.size());
    if (head.isIntegralNumber()) {
      out.add(ids(prompt, "prompt"));
      return out;
    }
    ChatRequestMapper.limit(prompt.size(), RequestLimits.PROMPTS, "prompt", "prompts");
    for (int i = 0; i < prompt.size(); i++) {
      JsonNode p = prompt.get(i);
      String at = "prompt[" + i + "]";
      if (head.isTextual() && p.isTextual()) out.add(p.asText());
      else if (head.isArray() && p.isArray()) out.add(ids(p, at));
      else throw shape(at);
    }
    return out;
  }

  /** A list of token ids: non-negative integers. */
  private static List<Integer> ids(JsonNode list, String at) {
    ChatRequestMapper.limit(list.size(), RequestLimits.PROMPT_TOKEN_IDS, at, "token ids");
    List<Integer> ids = new ArrayList<>(list.size());
    for (int i = 0; i < list.size(); i++) {
      JsonNode t = list.get(i);
      if (!t.isIntegralNumber() || !t.canConvertToInt() || t.intValue() < 0)
        throw bad("Token ids must be non-negative integers, got " + t + ".", at + "[" + i + "]");
      ids.add(t.intValue());
    }
    return ids;
  }

  private static ApiException shape(String at) {
    return bad(
        "`prompt` must be a string, a list of strings, a list of token ids or a list of lists of"
            + " token ids.",
        at);
  }

  private static boolean isTrue(Boolean b) {
    return b != null && b;
  }

  private static ApiException bad(String message, String param) {
    return ApiException.badRequest(message, param);
  }
}
