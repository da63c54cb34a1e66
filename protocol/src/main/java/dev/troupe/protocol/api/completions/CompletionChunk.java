package dev.troupe.protocol.api.completions;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.annotation.JsonNaming;
import dev.troupe.protocol.api.chat.Usage;
import java.util.List;

/**
 * One {@code data:} event of a streamed completion, vLLM's shape: a choice's chunk writes every key
 * (nulls included, {@code usage} too); the usage chunk at the end ({@code choices: []}) leaves
 * nulls out.
 */
@JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
@JsonPropertyOrder({"id", "object", "created", "model", "choices", "usage"})
public record CompletionChunk(
    String id, String object, long created, String model, List<Choice> choices, Usage usage) {

  public CompletionChunk {
    choices = List.copyOf(choices);
  }

  /**
   * One choice's piece.
   *
   * @param text the new text (with {@code echo}, the prompt first)
   * @param promptTokenIds on the choice's first chunk with {@code return_token_ids}
   * @param tokenIds this chunk's ids with {@code return_token_ids}
   */
  @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
  @JsonPropertyOrder({
    "index",
    "text",
    "logprobs",
    "finish_reason",
    "stop_reason",
    "prompt_token_ids",
    "token_ids"
  })
  public record Choice(
      int index,
      String text,
      CompletionLogprobs logprobs,
      String finishReason,
      Object stopReason,
      List<Integer> promptTokenIds,
      List<Integer> tokenIds) {}

  /** The last event before {@code [DONE]} when usage is on: no choices, nulls left out. */
  @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
  @JsonInclude(JsonInclude.Include.NON_NULL)
  @JsonPropertyOrder({"id", "object", "created", "model", "choices", "usage"})
  public record UsageChunk(
      String id, String object, long created, String model, List<Choice> choices, Usage usage) {}
}
