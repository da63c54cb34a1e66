package dev.troupe.gateway.replicas;

import com.typesafe.config.Config;
import java.time.Duration;
import java.util.Locale;

/**
 * {@code troupe.gateway.routing}: how the gateway picks a model replica (see the module's {@code
 * reference.conf}).
 *
 * @param cacheAware route by cached prefix and load ({@link CacheAwareRouting}); false = round
 *     robin
 * @param overlapWeight weight of a block to prefill against a block of load (Dynamo's {@code
 *     kv-overlap-score-weight}): above 1 favours cache hits, below 1 favours balance
 * @param adapterMissBlocks extra cost, in blocks, of a replica that does not have the request's
 *     adapter loaded (it must read the checkpoint first)
 * @param staleAfter a replica whose last report is older counts as unknown (no cached blocks, no
 *     reported load)
 * @param snapshotRetry the least time between two snapshot requests to one replica
 * @param debugHeader add {@code X-Troupe-Route} (replica, reason, expected cached tokens) to chat
 *     responses
 * @param disaggregation when a request's prefill runs on another replica than its decode
 */
public record RoutingSettings(
    boolean cacheAware,
    double overlapWeight,
    int adapterMissBlocks,
    Duration staleAfter,
    Duration snapshotRetry,
    boolean debugHeader,
    DisaggregationSettings disaggregation) {

  /** With the default disaggregation settings. */
  public RoutingSettings(
      boolean cacheAware,
      double overlapWeight,
      int adapterMissBlocks,
      Duration staleAfter,
      Duration snapshotRetry,
      boolean debugHeader) {
    this(
        cacheAware,
        overlapWeight,
        adapterMissBlocks,
        staleAfter,
        snapshotRetry,
        debugHeader,
        DisaggregationSettings.DEFAULTS);
  }

  public RoutingSettings {
    if (!(overlapWeight >= 0)) throw new IllegalArgumentException("overlapWeight must be >= 0");
    if (adapterMissBlocks < 0) throw new IllegalArgumentException("adapterMissBlocks must be >= 0");
    if (staleAfter == null || staleAfter.isNegative() || staleAfter.isZero())
      throw new IllegalArgumentException("staleAfter must be positive");
    if (snapshotRetry == null || snapshotRetry.isNegative())
      throw new IllegalArgumentException("snapshotRetry must be >= 0");
    if (disaggregation == null) disaggregation = DisaggregationSettings.DEFAULTS;
  }

  /** The defaults of {@code reference.conf}. */
  public static final RoutingSettings DEFAULTS =
      new RoutingSettings(true, 1.0, 64, Duration.ofSeconds(10), Duration.ofSeconds(2), true);

  /** Reads {@code troupe.gateway.routing}. */
  public static RoutingSettings fromConfig(Config config) {
    Config c = config.getConfig("troupe.gateway.routing");
    String policy = c.getString("policy").trim().toLowerCase(Locale.ROOT);
    if (!policy.equals("cache-aware") && !policy.equals("round-robin"))
      throw new IllegalArgumentException(
          "troupe.gateway.routing.policy must be cache-aware or round-robin, not " + policy);
    return new RoutingSettings(
        policy.equals("cache-aware"),
        c.getDouble("overlap-weight"),
        c.getInt("adapter-miss-blocks"),
        c.getDuration("stale-after"),
        c.getDuration("snapshot-retry"),
        c.getBoolean("debug-header"),
        DisaggregationSettings.fromConfig(c.getConfig("disaggregation")));
  }

  public RoutingSettings withCacheAware(boolean on) {
    return new RoutingSettings(
        on,
        overlapWeight,
        adapterMissBlocks,
        staleAfter,
        snapshotRetry,
        debugHeader,
        disaggregation);
  }

  public RoutingSettings withDisaggregation(DisaggregationSettings d) {
    return new RoutingSettings(
        cacheAware, overlapWeight, adapterMissBlocks, staleAfter, snapshotRetry, debugHeader, d);
  }
}
