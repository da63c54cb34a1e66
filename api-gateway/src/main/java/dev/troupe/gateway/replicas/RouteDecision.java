package dev.troupe.gateway.replicas;

/**
 * A routing choice and its reason, as shown in the {@code X-Troupe-Route} response header, the
 * DEBUG log and {@code troupe:routing_decisions_total}.
 *
 * @param replica the chosen replica index (with a prefill leg: the decode replica)
 * @param reason {@link #PREFIX}, {@link #LOAD}, {@link #ADAPTER}, {@link #LEAST_LOADED} or {@link
 *     #ROUND_ROBIN}
 * @param cachedTokens prompt tokens the chosen replica is expected to find cached (whole blocks,
 *     never the last prompt token)
 * @param bestCachedTokens the most any candidate was expected to find cached
 * @param disaggregation for a model whose replicas declare prefill/decode roles, whether the
 *     request is split and why not ({@code PD_*}); null otherwise
 * @param prefillReplica the replica running the prefill leg, or -1
 */
public record RouteDecision(
    int replica,
    String reason,
    int cachedTokens,
    int bestCachedTokens,
    String disaggregation,
    int prefillReplica) {
  /** The replica with the longest cached prefix won. */
  public static final String PREFIX = "prefix";

  /** Another replica had a longer cached prefix but more load: load won. */
  public static final String LOAD = "load";

  /** No prefix was cached anywhere; the request's adapter is loaded on the chosen replica. */
  public static final String ADAPTER = "adapter";

  /** No prefix was cached anywhere (or the prompt is unknown): the least loaded replica. */
  public static final String LEAST_LOADED = "least_loaded";

  /** Cache-aware routing is off: replicas in turn. */
  public static final String ROUND_ROBIN = "round_robin";

  /** Prefill on {@link #prefillReplica}, decode on {@link #replica}. */
  public static final String PD_DISAGGREGATED = "disaggregated";

  /** Served whole: too few prompt tokens are not cached on the decode replica. */
  public static final String PD_BELOW_THRESHOLD = "below_threshold";

  /** Served whole: every prefill replica's queue is at {@code max-prefill-queue}. */
  public static final String PD_PREFILL_QUEUE_FULL = "prefill_queue_full";

  /** Served whole: no replica other than the decode one that prefills is reachable. */
  public static final String PD_NO_PREFILL_REPLICA = "no_prefill_replica";

  /** Served whole: prompt logprobs, echo, beam search, or the client's own kv_transfer_params. */
  public static final String PD_NOT_ELIGIBLE = "not_eligible";

  /** Served whole: the prompt's tokens are not known here (no tokenizer on this gateway). */
  public static final String PD_PROMPT_UNKNOWN = "prompt_unknown";

  /** A request of a model without prefill/decode roles. */
  public RouteDecision(int replica, String reason, int cachedTokens, int bestCachedTokens) {
    this(replica, reason, cachedTokens, bestCachedTokens, null, -1);
  }

  /** This decision with a prefill/decode split decided. */
  RouteDecision withDisaggregation(String why, int prefill) {
    return new RouteDecision(replica, reason, cachedTokens, bestCachedTokens, why, prefill);
  }

  public boolean disaggregated() {
    return prefillReplica >= 0;
  }

  /**
   * The {@code X-Troupe-Route} header value, e.g. {@code replica=1; reason=prefix;
   * cached_tokens=992}, and for a model with prefill/decode roles {@code ...; disaggregation=
   * disaggregated; prefill_replica=0} or {@code ...; disaggregation=below_threshold}.
   */
  public String headerValue() {
    String value = "replica=" + replica + "; reason=" + reason + "; cached_tokens=" + cachedTokens;
    if (disaggregation != null) value += "; disaggregation=" + disaggregation;
    if (prefillReplica >= 0) value += "; prefill_replica=" + prefillReplica;
    return value;
  }
}
