package dev.troupe.gateway.replicas;

import dev.troupe.protocol.cluster.GenerationRequest;

/**
 * Renders and tokenizes a request's prompt at the gateway exactly as the model's workers do, so the
 * gateway can compute its block-hash chain and route by cached prefix (vLLM's and Dynamo's front
 * ends tokenize too, before the engine). The ids then travel with the request, so the worker does
 * not tokenize it again. Implemented where the model's tokenizer is available (the node launcher
 * wires it from the model directory); {@link #NONE} elsewhere.
 */
public interface PromptTokenizer {

  /**
   * The prompt's token ids, or null when this gateway cannot tokenize for {@code model}, or the
   * prompt cannot be rendered (the worker then reports the error in its words). Never throws;
   * thread-safe; may take milliseconds (call it off the HTTP threads).
   *
   * @param maxModelLen the model's context length (as its workers report it): truncation and the
   *     prompt bound depend on it
   */
  int[] promptTokenIds(String model, int maxModelLen, GenerationRequest request);

  /** Tokenizes nothing: routing falls back to load. */
  PromptTokenizer NONE = (model, maxModelLen, request) -> null;
}
