package dev.troupe.protocol.api.chat;

import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.annotation.JsonNaming;
import java.util.List;
import java.util.Map;

/**
 * A non-streaming chat completion, vLLM v0.11's shape: every field present, nulls included, in
 * vLLM's key order.
 *
 * @param id {@code chatcmpl-<request id>}
 * @param object always {@code chat.completion}
 * @param created seconds since the epoch
 * @param model the served model name
 * @param promptLogprobs when asked for: one entry per prompt token (the first null), each keyed by
 *     token id as a string
 * @param promptTokenIds with {@code return_token_ids}
 * @param kvTransferParams the KV connector's reply (always null without one)
 */
@JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
@JsonPropertyOrder({
  "id",
  "object",
  "created",
  "model",
  "choices",
  "service_tier",
  "system_fingerprint",
  "usage",
  "prompt_logprobs",
  "prompt_token_ids",
  "kv_transfer_params"
})
public record ChatCompletionResponse(
    String id,
    String object,
    long created,
    String model,
    List<Choice> choices,
    String serviceTier,
    String systemFingerprint,
    Usage usage,
    List<Map<String, PromptLogprob>> promptLogprobs,
    List<Integer> promptTokenIds,
    Map<String, Object> kvTransferParams) {

  public static final String OBJECT = "chat.completion";

  public ChatCompletionResponse {
    choices = List.copyOf(choices);
  }

  /**
   * One choice.
   *
   * @param stopReason the matched stop string, the stop token id, or null
   * @param tokenIds generated ids with {@code return_token_ids}, else null
   */
  @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
  @JsonPropertyOrder({"index", "message", "logprobs", "finish_reason", "stop_reason", "token_ids"})
  public record Choice(
      int index,
      ChatMessage message,
      ChoiceLogprobs logprobs,
      String finishReason,
      Object stopReason,
      List<Integer> tokenIds) {}

  /** One prompt position's entry of {@code prompt_logprobs}. */
  @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
  @JsonPropertyOrder({"logprob", "rank", "decoded_token"})
  public record PromptLogprob(double logprob, Integer rank, String decodedToken) {}
}
