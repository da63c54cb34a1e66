package dev.troupe.scheduler;

import dev.troupe.protocol.kv.BlockHash;
import java.util.List;

/**
 * How a replica's prefix-cache index changed since the last {@link PrefixCache#drainChanges()}
 * (vLLM's / Dynamo's KV events: block stored, block removed, all cleared), for routers that track
 * which replica holds which prefix.
 *
 * <p>Apply it as: when {@code replace}, forget everything known about the replica first; then
 * remove {@code removed} and add {@code stored} (the two never share a hash: each changed hash
 * appears once, with its state at the end of the window).
 *
 * @param replace the index was cleared, or changed more than the log keeps, since the last drain:
 *     {@code stored} is then its complete content
 * @param stored hashes now in the index
 * @param removed hashes no longer in the index (evicted)
 */
public record CacheDelta(boolean replace, List<BlockHash> stored, List<BlockHash> removed) {

  public CacheDelta {
    stored = List.copyOf(stored);
    removed = List.copyOf(removed);
  }

  /** Nothing changed. */
  public boolean isEmpty() {
    return !replace && stored.isEmpty() && removed.isEmpty();
  }
}
