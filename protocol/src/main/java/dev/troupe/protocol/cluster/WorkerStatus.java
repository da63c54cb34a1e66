package dev.troupe.protocol.cluster;

import dev.troupe.protocol.CborSerializable;

/**
 * A worker's state for routing and monitoring: the answer to {@link ModelWorkerProtocol.GetStatus}.
 *
 * @param entityId {@code model#replica}
 * @param maxModelLen the model's context length
 * @param schedulingPolicy {@code fcfs} or {@code priority}
 * @param waiting requests queued, not yet running
 * @param running requests holding KV blocks
 * @param preemptions requests preempted since start
 * @param kvBlocksUsed KV blocks in use
 * @param kvBlocksTotal KV blocks in the cache
 * @param weightVersion version of the weights/adapter being served (0 = base)
 * @param promptTokens prompt tokens of the requests admitted since start (once per request,
 *     whatever n is)
 * @param generationTokens tokens generated since start, every choice counted
 * @param prefixCacheQueries prompt tokens of admitted requests that looked the prefix cache up
 *     (vLLM's {@code prefix_cache_queries}; a resumption after preemption is not counted again)
 * @param prefixCacheHits of those, the tokens found cached ({@code prefix_cache_hits})
 * @param latencies the replica's request latency histograms, or null when it has none (a replica
 *     whose model did not load)
 * @param unavailable why the replica cannot serve (its model failed to load, or is not configured),
 *     one line; null when it serves
 */
public record WorkerStatus(
    String entityId,
    String model,
    int maxModelLen,
    String schedulingPolicy,
    int waiting,
    int running,
    long preemptions,
    int kvBlocksUsed,
    int kvBlocksTotal,
    long weightVersion,
    long promptTokens,
    long generationTokens,
    long prefixCacheQueries,
    long prefixCacheHits,
    Latencies latencies,
    String unavailable)
    implements CborSerializable {

  /** A replica that serves. */
  public WorkerStatus(
      String entityId,
      String model,
      int maxModelLen,
      String schedulingPolicy,
      int waiting,
      int running,
      long preemptions,
      int kvBlocksUsed,
      int kvBlocksTotal,
      long weightVersion,
      long promptTokens,
      long generationTokens,
      long prefixCacheQueries,
      long prefixCacheHits,
      Latencies latencies) {
    this(
        entityId,
        model,
        maxModelLen,
        schedulingPolicy,
        waiting,
        running,
        preemptions,
        kvBlocksUsed,
        kvBlocksTotal,
        weightVersion,
        promptTokens,
        generationTokens,
        prefixCacheQueries,
        prefixCacheHits,
        latencies,
        null);
  }

  /** A replica that cannot serve {@code model}, and why. */
  public static WorkerStatus unavailable(String entityId, String model, String reason) {
    return new WorkerStatus(entityId, model, 0, "fcfs", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, null, reason);
  }

  /** Without prefix-cache counts or latencies (a replica that serves nothing, tests). */
  public WorkerStatus(
      String entityId,
      String model,
      int maxModelLen,
      String schedulingPolicy,
      int waiting,
      int running,
      long preemptions,
      int kvBlocksUsed,
      int kvBlocksTotal,
      long weightVersion,
      long promptTokens,
      long generationTokens) {
    this(
        entityId,
        model,
        maxModelLen,
        schedulingPolicy,
        waiting,
        running,
        preemptions,
        kvBlocksUsed,
        kvBlocksTotal,
        weightVersion,
        promptTokens,
        generationTokens,
        0,
        0,
        null,
        null);
  }

  /** Share of the KV cache held by requests, 0 to 1 (vLLM's {@code kv_cache_usage_perc}). */
  public double kvCacheUsage() {
    return kvBlocksTotal == 0 ? 0 : (double) kvBlocksUsed / kvBlocksTotal;
  }

  /**
   * vLLM's per-request latency histograms of one replica, measured on its engine's clock: time
   * queued before first scheduled, prefill (first scheduled to first token), decode (first to last
   * token), inference (first scheduled to last token), and the gap between two steps that gave a
   * request tokens.
   */
  public record Latencies(
      Histogram queue,
      Histogram prefill,
      Histogram decode,
      Histogram inference,
      Histogram interToken)
      implements CborSerializable {}

  /**
   * One histogram's state.
   *
   * @param bounds upper bounds of the buckets in seconds (the last bucket, +Inf, has none)
   * @param counts observations per bucket, not cumulative: {@code bounds.length + 1} of them
   * @param sum the sum of the observations, seconds
   */
  public record Histogram(double[] bounds, long[] counts, double sum) implements CborSerializable {
    public Histogram {
      if (bounds == null || counts == null || counts.length != bounds.length + 1)
        throw new IllegalArgumentException("a histogram has one count per bound and one for +Inf");
    }

    public long count() {
      long n = 0;
      for (long c : counts) n += c;
      return n;
    }
  }
}
