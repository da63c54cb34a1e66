package dev.troupe.scheduler;

import dev.troupe.protocol.kv.BlockHash;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * Coalesced changes of the cache index between two drains: per changed hash its last state (stored
 * or removed), so a hash stored, evicted and stored again within one window is reported once, as
 * stored. Bounded: beyond {@code capacity} changed hashes (the index itself holds at most as many
 * blocks as the pool) it stops recording and the next drain reports the whole index instead ({@link
 * CacheDelta#replace()}), which is then no larger than the diff would have been.
 */
final class CacheEventLog {
  private final int capacity;
  private final Map<BlockHash, Boolean> changes = new LinkedHashMap<>();
  private boolean cleared;
  private boolean overflowed;

  CacheEventLog(int capacity) {
    this.capacity = capacity;
  }

  void stored(BlockHash hash) {
    record(hash, true);
  }

  void removed(BlockHash hash) {
    record(hash, false);
  }

  /** The index was emptied: what came before no longer matters. */
  void cleared() {
    changes.clear();
    cleared = true;
  }

  private void record(BlockHash hash, boolean present) {
    if (overflowed) return;
    changes.remove(hash); // keep insertion order = order of the last change
    changes.put(hash, present);
    if (changes.size() > capacity) {
      changes.clear();
      overflowed = true;
    }
  }

  /** The changes since the last drain; {@code index} gives the whole index when it must replace. */
  CacheDelta drain(Supplier<List<BlockHash>> index) {
    CacheDelta delta;
    if (overflowed) {
      delta = new CacheDelta(true, index.get(), List.of());
    } else {
      List<BlockHash> stored = new ArrayList<>();
      List<BlockHash> removed = new ArrayList<>();
      for (Map.Entry<BlockHash, Boolean> e : changes.entrySet()) {
        if (e.getValue()) {
          stored.add(e.getKey());
        } else if (!cleared) { // after a clear the receiver forgets everything anyway
          removed.add(e.getKey());
        }
      }
      delta = new CacheDelta(cleared, stored, removed);
    }
    changes.clear();
    cleared = false;
    overflowed = false;
    return delta;
  }
}
