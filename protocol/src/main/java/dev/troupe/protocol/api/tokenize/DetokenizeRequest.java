package dev.troupe.protocol.api.tokenize;

import java.util.List;

/** vLLM's {@code POST /detokenize} body. */
public record DetokenizeRequest(String model, List<Integer> tokens) {}
