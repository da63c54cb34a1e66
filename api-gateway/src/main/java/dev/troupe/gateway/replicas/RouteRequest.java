package dev.troupe.gateway.replicas;

import dev.troupe.protocol.kv.BlockHash;
import java.util.List;

/**
 * What a routing decision is made from.
 *
 * @param model the served model
 * @param candidates replica indices the request may go to (all replicas, or the live ones); never
 *     empty
 * @param chain the hash chain of the prompt's full blocks ({@link
 *     dev.troupe.protocol.kv.BlockHasher}, with the request's adapter and salt), empty when the
 *     prompt's tokens are not known
 * @param promptTokens the prompt's length in tokens, 0 when not known
 * @param adapterKey the identity of the trained checkpoint (LoRA adapter) it runs with, or null
 */
record RouteRequest(
    String model,
    List<Integer> candidates,
    List<BlockHash> chain,
    int promptTokens,
    String adapterKey) {

  RouteRequest {
    if (candidates == null || candidates.isEmpty())
      throw new IllegalArgumentException("at least one candidate replica is required");
    candidates = List.copyOf(candidates);
    chain = chain == null ? List.of() : List.copyOf(chain);
  }
}
