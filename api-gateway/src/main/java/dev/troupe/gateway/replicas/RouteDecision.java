package dev.troupe.gateway.replicas;

/**
 * A routing choice and its reason, as shown in the {@code X-Troupe-Route} response header, the
 * DEBUG log and {@code troupe:routing_decisions_total}.
 *
 * @param replica the chosen replica index
 * @param reason {@link #PREFIX}, {@link #LOAD}, {@link #ADAPTER}, {@link #LEAST_LOADED} or {@link
 *     #ROUND_ROBIN}
 * @param cachedTokens prompt tokens the chosen replica is expected to find cached (whole blocks,
 *     never the last prompt token)
 * @param bestCachedTokens the most any candidate was expected to find cached
 */
public record RouteDecision(int replica, String reason, int cachedTokens, int bestCachedTokens) {
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

  /**
   * The {@code X-Troupe-Route} header value, e.g. {@code replica=1; reason=prefix;
   * cached_tokens=992}.
   */
  public String headerValue() {
    return "replica=" + replica + "; reason=" + reason + "; cached_tokens=" + cachedTokens;
  }
}
