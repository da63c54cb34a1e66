package dev.troupe.protocol.api.completions;

import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.annotation.JsonNaming;
import java.util.List;
import java.util.Map;

/**
 * A completion choice's {@code logprobs} (the legacy OpenAI shape vLLM writes): per token its
 * character offset in the choice's text, its logprob (null for the first prompt token, which has
 * none), its text, and its alternatives keyed by text (null where the logprob is).
 */
@JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
@JsonPropertyOrder({"text_offset", "token_logprobs", "tokens", "top_logprobs"})
public record CompletionLogprobs(
    List<Integer> textOffset,
    List<Double> tokenLogprobs,
    List<String> tokens,
    List<Map<String, Double>> topLogprobs) {

  public CompletionLogprobs {
    // logprobs and alternatives may be null per position: no List.copyOf
    textOffset = List.copyOf(textOffset);
    tokens = List.copyOf(tokens);
  }
}
