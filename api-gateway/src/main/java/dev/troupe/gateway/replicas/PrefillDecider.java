package dev.troupe.gateway.replicas;

import dev.troupe.protocol.cluster.GenerationRequest;
import dev.troupe.protocol.cluster.KvRole;
import java.util.ArrayList;
import java.util.List;

/**
 * Which replicas of a model take what under disaggregated prefill/decode, and whether one request
 * is disaggregated: llm-d's prefix-based P/D decider (the decode replica is chosen first; a prefill
 * leg is added only when the prompt tokens not cached on that replica exceed {@code
 * non-cached-tokens}) with Dynamo's conditional disaggregation (only while a prefill replica's
 * queue is short). Roles come from the replicas' cache reports ({@link
 * RoutingTable.View#kvRole()}).
 *
 * <p>The built-in path is on for a model only when at least one of its replicas declares a role
 * other than {@code both}: with every replica doing both phases there is no prefill pool to offload
 * to, and splitting a request between two such replicas would only add its KV transfer.
 */
final class PrefillDecider {
  private final RoutingTable table;
  private final RoutingSettings settings;
  private final CacheAwareRouting costs;

  PrefillDecider(RoutingTable table, RoutingSettings settings, CacheAwareRouting costs) {
    this.table = table;
    this.settings = settings;
    this.costs = costs;
  }

  /**
   * Whether {@code model}'s replicas ({@code 0..replicas-1}) have declared roles: some replica
   * reported a role other than {@code both}, and the built-in path is enabled.
   */
  boolean rolesDeclared(String model, int replicas) {
    if (!settings.disaggregation().enabled()) return false;
    for (int i = 0; i < replicas; i++) {
      KvRole r = table.view(model, i).kvRole();
      if (r != null && r != KvRole.BOTH) return true;
    }
    return false;
  }

  /**
   * The candidates that take whole requests and decode legs: those known to decode, or, while none
   * is known, those whose role is not known yet (a replica reports within a second of its start).
   * Empty when every candidate is prefill-only.
   */
  List<Integer> decoders(String model, List<Integer> candidates) {
    List<Integer> known = new ArrayList<>();
    List<Integer> unknown = new ArrayList<>();
    for (int i : candidates) {
      KvRole r = table.view(model, i).kvRole();
      if (r == null) unknown.add(i);
      else if (r.decodes()) known.add(i);
    }
    return known.isEmpty() ? unknown : known;
  }

  /**
   * The candidates for a client's own prefill half ({@code kv_transfer_params.do_remote_decode}, an
   * external proxy's): those known to prefill, else every candidate (a decode replica can prefill
   * too; the client asked for it).
   */
  List<Integer> prefillHalf(String model, List<Integer> candidates) {
    List<Integer> known = new ArrayList<>();
    for (int i : candidates) {
      KvRole r = table.view(model, i).kvRole();
      if (r != null && r.prefills()) known.add(i);
    }
    return known.isEmpty() ? candidates : known;
  }

  /**
   * Whether a request may be split at all. Never: a request asking for prompt logprobs or echo (the
   * decode replica computes only the last prompt token, so it has no logits for the others), beam
   * search, or one already carrying {@code kv_transfer_params} (an external proxy drives it).
   *
   * @param echo the completion echoes its prompt
   */
  static boolean eligible(GenerationRequest request, boolean echo) {
    return !echo
        && request.kvTransfer() == null
        && request.sampling().promptLogprobs() == null
        && !request.sampling().useBeamSearch();
  }

  /**
   * The per-request decision, once the decode replica is chosen.
   *
   * @param request the prompt as routed (chain, length; its candidates are the reachable replicas)
   * @param decode the decode replica's choice (its expected cached tokens)
   * @param eligible {@link #eligible}
   */
  Decision decide(RouteRequest request, RouteDecision decode, boolean eligible) {
    if (!eligible) return Decision.aggregated(RouteDecision.PD_NOT_ELIGIBLE);
    if (request.promptTokens() == 0 && settings.disaggregation().nonCachedTokens() > 0)
      return Decision.aggregated(RouteDecision.PD_PROMPT_UNKNOWN);
    List<Integer> prefillers = new ArrayList<>();
    for (int i : request.candidates()) {
      KvRole r = table.view(request.model(), i).kvRole();
      if (i != decode.replica() && r != null && r.prefills()) prefillers.add(i);
    }
    if (prefillers.isEmpty()) return Decision.aggregated(RouteDecision.PD_NO_PREFILL_REPLICA);
    int nonCached = request.promptTokens() - decode.cachedTokens();
    if (nonCached <= settings.disaggregation().nonCachedTokens())
      return Decision.aggregated(RouteDecision.PD_BELOW_THRESHOLD);
    List<Integer> open = new ArrayList<>();
    for (int i : prefillers)
      if (queued(request.model(), i) < settings.disaggregation().maxPrefillQueue()) open.add(i);
    if (open.isEmpty()) return Decision.aggregated(RouteDecision.PD_PREFILL_QUEUE_FULL);
    // Among the open prefill replicas, the cheapest by cached prefix and load, as for decode.
    int prefill =
        settings.cacheAware()
            ? costs
                .choose(
                    new RouteRequest(
                        request.model(),
                        open,
                        request.chain(),
                        request.promptTokens(),
                        request.adapterKey()))
                .replica()
            : fewestQueued(request.model(), open);
    return new Decision(prefill, RouteDecision.PD_DISAGGREGATED);
  }

  /**
   * Requests queued at a replica: those waiting there as last reported, or this gateway's own in
   * flight there, whichever is larger (reports lag by an interval; this gateway's count does not).
   */
  int queued(String model, int replica) {
    RoutingTable.View v = table.view(model, replica);
    int reported = v.fresh(table.now(), settings.staleAfter().toNanos()) ? v.load().waiting() : 0;
    return Math.max(reported, v.inFlight());
  }

  private int fewestQueued(String model, List<Integer> replicas) {
    int best = replicas.get(0);
    for (int i : replicas) if (queued(model, i) < queued(model, best)) best = i;
    return best;
  }

  /**
   * A request's split.
   *
   * @param prefillReplica the replica running its prefill leg, or -1: served whole
   * @param reason {@link RouteDecision}'s {@code PD_*}
   */
  record Decision(int prefillReplica, String reason) {
    static Decision aggregated(String reason) {
      return new Decision(-1, reason);
    }

    boolean disaggregated() {
      return prefillReplica >= 0;
    }
  }
}
