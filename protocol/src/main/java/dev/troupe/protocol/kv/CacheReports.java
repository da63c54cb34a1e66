package dev.troupe.protocol.kv;

import dev.troupe.protocol.CborSerializable;
import dev.troupe.protocol.cluster.KvRole;
import java.util.ArrayList;
import java.util.List;

/**
 * What model replicas tell gateways about their prefix caches, for cache-aware routing (the KV
 * events of vLLM, Dynamo and llm-d: blocks stored, blocks removed, all cleared), over Pekko pub-sub
 * topics, one pair per served model.
 *
 * <p>Each replica publishes a {@link CacheReport} on {@link #reportTopic} after engine steps that
 * changed its cache index (coalesced, at most one per publish interval) and at least once per
 * heartbeat interval (then often without changes: the report also carries the replica's load). A
 * gateway that sees a gap in a replica's sequence numbers, or a replica it does not know, publishes
 * a {@link SnapshotRequest} on {@link #requestTopic}; the replica answers with a report that
 * replaces everything (its whole index, at most one block hash per KV block it has).
 *
 * <p>Why pub-sub and not Distributed Data: the index of a replica changes every few steps and is as
 * large as its KV cache (thousands of hashes); a replicated set of it would gossip that churn and
 * keep tombstones of every removed hash, while only gateways need it and only approximately (a
 * stale entry costs one cache miss, never a wrong answer). Pub-sub sends each change once to each
 * gateway; sequence numbers make losses visible and a snapshot repairs them, and a gateway that
 * (re)starts asks for snapshots. Bounded by construction: one message per replica per interval,
 * none larger than the replica's cache.
 */
public final class CacheReports {
  private CacheReports() {}

  /** The topic carrying {@link CacheReport}s of {@code model}'s replicas. */
  public static String reportTopic(String model) {
    return "troupe-prefix-cache-" + model;
  }

  /** The topic carrying {@link SnapshotRequest}s to {@code model}'s replicas. */
  public static String requestTopic(String model) {
    return "troupe-prefix-cache-requests-" + model;
  }

  /**
   * Changes of one replica's prefix-cache index, and its load.
   *
   * @param replica the worker entity id ({@code <model>#<index>})
   * @param incarnation random id of the replica's engine instance: a restarted or moved replica
   *     starts an empty cache and a new sequence
   * @param seq 1, 2, 3... within the incarnation; a gap means a report was lost
   * @param replace forget what was known of this replica first ({@code stored} is then its whole
   *     index)
   * @param blockSize tokens per KV block (the chain's block length)
   * @param stored hashes added to the index, packed by {@link #pack}
   * @param removed hashes evicted from the index, packed by {@link #pack}
   * @param load the replica's load when the report was made
   * @param kvRole what it does in disaggregated prefill/decode (its node's {@code --kv-role} for
   *     the model); null from an older node means {@link KvRole#BOTH}
   */
  public record CacheReport(
      String replica,
      String incarnation,
      long seq,
      boolean replace,
      int blockSize,
      long[] stored,
      long[] removed,
      ReplicaLoad load,
      KvRole kvRole)
      implements CborSerializable {

    /** A replica that does both phases. */
    public CacheReport(
        String replica,
        String incarnation,
        long seq,
        boolean replace,
        int blockSize,
        long[] stored,
        long[] removed,
        ReplicaLoad load) {
      this(replica, incarnation, seq, replace, blockSize, stored, removed, load, KvRole.BOTH);
    }

    public CacheReport {
      if (replica == null || incarnation == null || load == null)
        throw new IllegalArgumentException("replica, incarnation and load are required");
      if (seq < 1) throw new IllegalArgumentException("seq starts at 1");
      if (blockSize < 1) throw new IllegalArgumentException("blockSize must be >= 1");
      stored = stored == null ? new long[0] : stored;
      removed = removed == null ? new long[0] : removed;
      if (stored.length % 2 != 0 || removed.length % 2 != 0)
        throw new IllegalArgumentException("hashes are packed as (hi, lo) pairs");
      if (kvRole == null) kvRole = KvRole.BOTH;
    }

    public List<BlockHash> storedHashes() {
      return unpack(stored);
    }

    public List<BlockHash> removedHashes() {
      return unpack(removed);
    }
  }

  /**
   * A replica's load, as routers weigh it against cache hits.
   *
   * @param waiting requests waiting for admission
   * @param running requests holding KV blocks
   * @param waitingTokens tokens the waiting requests still have to prefill
   * @param kvBlocksUsed KV blocks held by requests (cached blocks no request holds are free)
   * @param kvBlocksTotal KV blocks of the replica
   * @param adapters identities of the LoRA adapters (trained checkpoints) it has loaded
   */
  public record ReplicaLoad(
      int waiting,
      int running,
      long waitingTokens,
      int kvBlocksUsed,
      int kvBlocksTotal,
      List<String> adapters)
      implements CborSerializable {
    public ReplicaLoad {
      adapters = adapters == null ? List.of() : List.copyOf(adapters);
    }
  }

  /**
   * Asks replicas to publish their whole index ({@link CacheReport#replace()}).
   *
   * @param replica the entity id of the replica asked, or null for all replicas of the model
   */
  public record SnapshotRequest(String replica) implements CborSerializable {}

  /** Hashes as (hi, lo) pairs, the compact form reports carry. */
  public static long[] pack(List<BlockHash> hashes) {
    long[] packed = new long[2 * hashes.size()];
    for (int i = 0; i < hashes.size(); i++) {
      packed[2 * i] = hashes.get(i).hi();
      packed[2 * i + 1] = hashes.get(i).lo();
    }
    return packed;
  }

  /** The inverse of {@link #pack}. */
  public static List<BlockHash> unpack(long[] packed) {
    List<BlockHash> hashes = new ArrayList<>(packed.length / 2);
    for (int i = 0; i + 1 < packed.length; i += 2)
      hashes.add(new BlockHash(packed[i], packed[i + 1]));
    return hashes;
  }
}
