package dev.troupe.protocol.cluster;

import dev.troupe.protocol.CborSerializable;
import java.util.List;

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
 * @param details where the replica runs and what it holds; null from a replica that serves nothing
 *     (and in tests)
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
    String unavailable,
    Details details)
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
        null,
        null);
  }

  /** A replica that cannot serve {@code model}, and why. */
  public static WorkerStatus unavailable(String entityId, String model, String reason) {
    return new WorkerStatus(
        entityId, model, 0, "fcfs", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, null, reason, null);
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
        null,
        null);
  }

  /** Share of the KV cache held by requests, 0 to 1 (vLLM's {@code kv_cache_usage_perc}). */
  public double kvCacheUsage() {
    return kvBlocksTotal == 0 ? 0 : (double) kvBlocksUsed / kvBlocksTotal;
  }

  /** Share of the prompt tokens looked up in the prefix cache that were found, 0 to 1. */
  public double prefixCacheHitRate() {
    return prefixCacheQueries == 0 ? 0 : (double) prefixCacheHits / prefixCacheQueries;
  }

  /** This status with {@code details}. */
  public WorkerStatus withDetails(Details details) {
    return new WorkerStatus(
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
        unavailable,
        details);
  }

  /**
   * Where a replica runs and what it holds, for the cluster view ({@code GET /v1/cluster}) and the
   * {@code node} label of its metrics.
   *
   * @param node the cluster address ({@code host:port}) of the node hosting the replica
   * @param device where its model runs
   * @param adapters the LoRA adapters registered with it now, by name
   * @param prefillTokensPerSecond prompt tokens admitted per second over the last minute (the same
   *     count as {@code vllm:prompt_tokens_total}; over the replica's life when it is younger)
   * @param decodeTokensPerSecond tokens generated per second over the last minute
   * @param draining it takes no new request (its node is shutting down)
   * @param kvRole what it does in disaggregated prefill/decode (its node's {@code --kv-role} for
   *     the model; null from an older node means {@link KvRole#BOTH})
   * @param kvTransfer its KV transfer counters; null from a replica whose runner cannot move KV
   *     blocks (and from an older node)
   */
  public record Details(
      String node,
      Device device,
      List<LoadedAdapter> adapters,
      double prefillTokensPerSecond,
      double decodeTokensPerSecond,
      boolean draining,
      KvRole kvRole,
      KvTransferStats kvTransfer)
      implements CborSerializable {
    public Details {
      adapters = adapters == null ? List.of() : List.copyOf(adapters);
      if (kvRole == null) kvRole = KvRole.BOTH;
    }

    /** Without KV transfer counters. */
    public Details(
        String node,
        Device device,
        List<LoadedAdapter> adapters,
        double prefillTokensPerSecond,
        double decodeTokensPerSecond,
        boolean draining,
        KvRole kvRole) {
      this(
          node,
          device,
          adapters,
          prefillTokensPerSecond,
          decodeTokensPerSecond,
          draining,
          kvRole,
          null);
    }

    /** A replica that does both phases. */
    public Details(
        String node,
        Device device,
        List<LoadedAdapter> adapters,
        double prefillTokensPerSecond,
        double decodeTokensPerSecond,
        boolean draining) {
      this(
          node,
          device,
          adapters,
          prefillTokensPerSecond,
          decodeTokensPerSecond,
          draining,
          KvRole.BOTH);
    }
  }

  /**
   * A replica's KV transfer counters since it started (disaggregated prefill/decode).
   *
   * @param pulledBytes KV bytes this replica pulled from prefill replicas and imported (completed
   *     pulls only: a failed or cut pull imports nothing)
   * @param servedBytes KV bytes of this replica's leased blocks read out for pulls by decode
   *     replicas
   * @param pullSeconds how long each completed pull took, from asking to having every block
   */
  public record KvTransferStats(long pulledBytes, long servedBytes, Histogram pullSeconds)
      implements CborSerializable {
    public KvTransferStats {
      if (pulledBytes < 0 || servedBytes < 0 || pullSeconds == null)
        throw new IllegalArgumentException("byte counts are >= 0 and pullSeconds is required");
    }
  }

  /**
   * The device a replica's model runs on.
   *
   * @param kind {@code cpu} or {@code cuda}
   * @param index the GPU's ordinal; -1 on the CPU
   * @param name the GPU's name, or the CPU's architecture and hardware threads
   * @param memoryBytes the GPU's memory (the JVM's maximum heap on the CPU); 0 when unknown
   */
  public record Device(String kind, int index, String name, long memoryBytes)
      implements CborSerializable {}

  /**
   * A LoRA adapter a replica holds.
   *
   * @param name the served model name of the checkpoint ({@code <model id>:step<N>})
   * @param step the checkpoint step
   */
  public record LoadedAdapter(String name, long step) implements CborSerializable {}

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
      Histogram interToken,
      Tokens tokens)
      implements CborSerializable {
    /** Without the token histograms. */
    public Latencies(
        Histogram queue,
        Histogram prefill,
        Histogram decode,
        Histogram inference,
        Histogram interToken) {
      this(queue, prefill, decode, inference, interToken, null);
    }
  }

  /**
   * vLLM's per-request and per-step histograms beside the latencies, with its buckets: prompt and
   * generated tokens per request (each choice counts as one request, as vLLM v1 runs n > 1 as n
   * requests), the most tokens any choice of a request generated, the {@code n} and {@code
   * max_tokens} parameters, the mean time per output token of a request (decode time over its
   * tokens after the first, seconds) and the tokens one engine step computed.
   */
  public record Tokens(
      Histogram promptTokens,
      Histogram generationTokens,
      Histogram maxGenerationTokens,
      Histogram paramsN,
      Histogram paramsMaxTokens,
      Histogram timePerOutputToken,
      Histogram iterationTokens)
      implements CborSerializable {}

  /**
   * One histogram's state.
   *
   * @param bounds upper bounds of the buckets, in the histogram's unit (the last bucket, +Inf, has
   *     none)
   * @param counts observations per bucket, not cumulative: {@code bounds.length + 1} of them
   * @param sum the sum of the observations
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
