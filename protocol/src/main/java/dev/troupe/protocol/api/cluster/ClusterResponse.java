package dev.troupe.protocol.api.cluster;

import com.fasterxml.jackson.annotation.JsonProperty;
import dev.troupe.protocol.api.preview.training.TrainingJobSummary;
import java.util.List;
import java.util.Map;

/**
 * {@code GET /v1/cluster}: the cluster as the answering gateway sees it now — members, sharding,
 * every model replica with its load, training jobs and trajectory-log counts. Times are Unix
 * seconds. Parts that could not be read in time are left out and named in {@code unanswered}.
 *
 * @param gateway the answering node's address
 * @param leader the cluster leader's address, or null
 * @param members every member the gateway knows, by address
 * @param sharding each entity type's shard regions, cluster-wide
 * @param replicas every configured replica of every served model, by id (a replica no node reports
 *     has state {@code unplaced})
 * @param trainingJobs counts of the training jobs by status and the newest ones
 * @param trajectoryLogs logged groups and trajectories per trainable model and split
 * @param unanswered what did not answer in time, one line each
 */
public record ClusterResponse(
    String object,
    @JsonProperty("observed_at") long observedAt,
    String gateway,
    String leader,
    List<Member> members,
    List<ShardType> sharding,
    List<Replica> replicas,
    @JsonProperty("training_jobs") TrainingJobs trainingJobs,
    @JsonProperty("trajectory_logs") List<TrajectoryLog> trajectoryLogs,
    List<String> unanswered) {

  /**
   * A cluster member.
   *
   * @param status Pekko's member status: joining, weakly_up, up, leaving, exiting, down, removed
   * @param reachable false when some member's failure detector suspects it
   * @param upSince when its actor system started (Unix seconds), or null when it did not report
   * @param draining it is shutting down, as it reports
   * @param jvm its JVM, as it reports (null when it did not)
   * @param replicas ids of the model replicas it hosts
   */
  public record Member(
      String node,
      List<String> roles,
      String status,
      boolean reachable,
      @JsonProperty("app_version") String appVersion,
      @JsonProperty("up_since") Long upSince,
      boolean draining,
      Jvm jvm,
      List<String> replicas) {}

  /** A member's JVM. */
  public record Jvm(
      int processors,
      @JsonProperty("heap_used_bytes") long heapUsedBytes,
      @JsonProperty("heap_max_bytes") long heapMaxBytes,
      @JsonProperty("load_average") double loadAverage) {}

  /**
   * One entity type's regions.
   *
   * @param type the entity type key name ({@code ModelWorker}, {@code TrainingJob}, ...)
   * @param regions one per node that hosts the type, with its shard and entity counts
   * @param unanswered nodes whose region did not answer
   */
  public record ShardType(String type, List<Region> regions, List<String> unanswered) {}

  /** A node's region of one entity type: its shards and the entities running in them. */
  public record Region(String node, int shards, int entities) {}

  /**
   * A model replica.
   *
   * @param node the node hosting it, or null when none reports it
   * @param state loading, ready, restarting, draining, failed, unresponsive, or unplaced (no node
   *     reports it: it is starting somewhere, or its node is gone)
   * @param reason why it failed or restarts, else null
   * @param restarts restarts after an engine failure on its node
   * @param device where it runs (null until it reports)
   * @param adapters the LoRA adapters it holds
   * @param requests running and waiting requests, and preemptions since it started
   * @param kvCache KV-cache blocks in use
   * @param prefixCache prefix-cache lookups and hits, in prompt tokens
   * @param tokens prompt and generated tokens since it started
   * @param throughput prompt (prefill) and generated (decode) tokens per second over the last
   *     minute
   * @param kvRole what it does in disaggregated prefill/decode: {@code prefill}, {@code decode} or
   *     {@code both} (its node's {@code --kv-role}); null until it reports
   */
  public record Replica(
      String id,
      String model,
      int replica,
      String node,
      String state,
      String reason,
      int restarts,
      Device device,
      List<Adapter> adapters,
      Requests requests,
      @JsonProperty("kv_cache") KvCache kvCache,
      @JsonProperty("prefix_cache") PrefixCache prefixCache,
      Tokens tokens,
      Throughput throughput,
      @JsonProperty("kv_role") String kvRole) {}

  /** {@code kind} cpu or cuda; {@code index} -1 on the CPU; {@code memory_bytes} 0 unknown. */
  public record Device(
      String kind, int index, String name, @JsonProperty("memory_bytes") long memoryBytes) {}

  /** A LoRA adapter a replica holds. */
  public record Adapter(String name, long step) {}

  public record Requests(int running, int waiting, long preemptions) {}

  public record KvCache(
      @JsonProperty("blocks_used") int blocksUsed,
      @JsonProperty("blocks_total") int blocksTotal,
      double usage) {}

  public record PrefixCache(long queries, long hits, @JsonProperty("hit_rate") double hitRate) {}

  public record Tokens(long prompt, long generation) {}

  public record Throughput(
      @JsonProperty("prefill_tokens_per_second") double prefillTokensPerSecond,
      @JsonProperty("decode_tokens_per_second") double decodeTokensPerSecond) {}

  /**
   * @param counts jobs by status (queued, running, succeeded, failed)
   * @param recent the newest jobs, newest first (at most 10)
   */
  public record TrainingJobs(Map<String, Integer> counts, List<TrainingJobSummary> recent) {}

  /** One trainable model's logged trajectories of one split. */
  public record TrajectoryLog(
      @JsonProperty("model_id") String modelId,
      String model,
      String split,
      long groups,
      long trajectories) {}
}
