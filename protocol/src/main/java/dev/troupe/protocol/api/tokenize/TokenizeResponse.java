package dev.troupe.protocol.api.tokenize;

import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.annotation.JsonNaming;
import java.util.List;

/** vLLM's {@code /tokenize} reply; {@code token_strs} is null unless {@code return_token_strs}. */
@JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
@JsonPropertyOrder({"count", "max_model_len", "tokens", "token_strs"})
public record TokenizeResponse(
    int count, int maxModelLen, List<Integer> tokens, List<String> tokenStrs) {}
