package dev.troupe.protocol.api.completions;

import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.annotation.JsonNaming;
import dev.troupe.protocol.api.chat.ChatCompletionResponse.PromptLogprob;
import dev.troupe.protocol.api.chat.Usage;
import java.util.List;
import java.util.Map;

/**
 * A non-streaming completion, vLLM's shape: every field present, nulls included, in vLLM's key
 * order.
 *
 * @param id {@code cmpl-<request id>}
 * @param object always {@code text_completion}
 * @param systemFingerprint the trained checkpoint that generated it ({@code <model id>:step<N>}),
 *     else null
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
  "kv_transfer_params"
})
public record CompletionResponse(
    String id,
    String object,
    long created,
    String model,
    List<Choice> choices,
    String serviceTier,
    String systemFingerprint,
    Usage usage,
    Map<String, Object> kvTransferParams) {

  public static final String OBJECT = "text_completion";

  public CompletionResponse {
    choices = List.copyOf(choices);
  }

  /**
   * One choice: with several prompts, the choices of prompt 0 first, then prompt 1's…
   *
   * @param stopReason the matched stop string or stop token id, else null
   * @param tokenIds the generated ids, with {@code return_token_ids}
   * @param promptLogprobs the prompt's logprobs when asked for (first entry null)
   * @param promptTokenIds the prompt's ids, with {@code return_token_ids}
   */
  @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
  @JsonPropertyOrder({
    "index",
    "text",
    "logprobs",
    "finish_reason",
    "stop_reason",
    "token_ids",
    "prompt_logprobs",
    "prompt_token_ids"
  })
  public record Choice(
      int index,
      String text,
      CompletionLogprobs logprobs,
      String finishReason,
      Object stopReason,
      List<Integer> tokenIds,
      List<Map<String, PromptLogprob>> promptLogprobs,
      List<Integer> promptTokenIds) {}
}
