package dev.troupe.protocol.api.chat;

import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.annotation.JsonNaming;
import java.util.List;

/**
 * {@code choices[].logprobs}: one entry per generated token (the final EOS/stop token included).
 */
public record ChoiceLogprobs(List<TokenLogprob> content) {

  public ChoiceLogprobs {
    content = List.copyOf(content);
  }

  /**
   * One generated token.
   *
   * @param bytes UTF-8 bytes of {@code token}
   * @param topLogprobs the requested number of alternatives, sampled token first (vLLM's order)
   */
  @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
  @JsonPropertyOrder({"token", "logprob", "bytes", "top_logprobs"})
  public record TokenLogprob(
      String token, double logprob, List<Integer> bytes, List<TopLogprob> topLogprobs) {}

  /** One alternative in {@code top_logprobs}. */
  @JsonPropertyOrder({"token", "logprob", "bytes"})
  public record TopLogprob(String token, double logprob, List<Integer> bytes) {}
}
