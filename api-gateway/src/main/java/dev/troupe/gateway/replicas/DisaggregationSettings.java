package dev.troupe.gateway.replicas;

import com.typesafe.config.Config;

/**
 * {@code troupe.gateway.routing.disaggregation}: when the gateway splits a request's prefill and
 * decode across two replicas ({@link PrefillDecider}).
 *
 * @param enabled the built-in prefill/decode path; off: every request is served whole
 * @param nonCachedTokens disaggregate only when more prompt tokens than this are not cached on the
 *     chosen decode replica (llm-d's {@code nonCachedTokens}, Dynamo's {@code
 *     max-local-prefill-length}); 0 = always
 * @param maxPrefillQueue disaggregate only when a prefill replica has fewer requests queued than
 *     this (Dynamo's {@code max-prefill-queue-size})
 */
public record DisaggregationSettings(boolean enabled, int nonCachedTokens, int maxPrefillQueue) {

  /** The defaults of {@code reference.conf}. */
  public static final DisaggregationSettings DEFAULTS = new DisaggregationSettings(true, 1024, 4);

  public DisaggregationSettings {
    if (nonCachedTokens < 0) throw new IllegalArgumentException("non-cached-tokens must be >= 0");
    if (maxPrefillQueue < 1) throw new IllegalArgumentException("max-prefill-queue must be >= 1");
  }

  /** Reads the block {@code c} ({@code troupe.gateway.routing.disaggregation}). */
  static DisaggregationSettings fromConfig(Config c) {
    return new DisaggregationSettings(
        c.getBoolean("enabled"), c.getInt("non-cached-tokens"), c.getInt("max-prefill-queue"));
  }
}
