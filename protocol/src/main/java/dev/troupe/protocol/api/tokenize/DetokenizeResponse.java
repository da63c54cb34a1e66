package dev.troupe.protocol.api.tokenize;

/** vLLM's {@code /detokenize} reply: the decoded text. */
public record DetokenizeResponse(String prompt) {}
