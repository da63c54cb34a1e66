package dev.troupe.protocol.api.chat;

import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.annotation.JsonNaming;

/**
 * Token counts, in vLLM's key order (prompt, total, completion). {@code prompt_tokens_details} is
 * {@code {"cached_tokens":k}} when some prompt tokens came from the prefix cache, else null.
 */
@JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
@JsonPropertyOrder({"prompt_tokens", "total_tokens", "completion_tokens", "prompt_tokens_details"})
public record Usage(
    int promptTokens,
    int totalTokens,
    int completionTokens,
    PromptTokensDetails promptTokensDetails) {

  public static Usage of(int promptTokens, int completionTokens, int cachedTokens) {
    return new Usage(
        promptTokens,
        promptTokens + completionTokens,
        completionTokens,
        cachedTokens > 0 ? new PromptTokensDetails(cachedTokens) : null);
  }

  /** {@code usage.prompt_tokens_details}. */
  @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
  public record PromptTokensDetails(int cachedTokens) {}
}
