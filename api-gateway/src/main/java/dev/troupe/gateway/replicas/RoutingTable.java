package dev.troupe.gateway.replicas;

import dev.troupe.protocol.cluster.KvRole;
import dev.troupe.protocol.cluster.ModelWorkerProtocol;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.ReplicaId;
import dev.troupe.protocol.kv.BlockHash;
import dev.troupe.protocol.kv.CacheReports.CacheReport;
import dev.troupe.protocol.kv.CacheReports.ReplicaLoad;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * What this gateway knows of every replica of every model ({@link View}): the block hashes its
 * prefix cache holds and its load as last reported ({@link CacheReport}), and the requests this
 * gateway has in flight on it (known at once, while reports lag by up to a publish interval).
 * Thread-safe: reports arrive on an actor, routing reads from request threads. One per gateway.
 */
final class RoutingTable {
  private final Map<String, Map<Integer, View>> views = new ConcurrentHashMap<>();
  private final LongSupplier clock;

  RoutingTable() {
    this(System::nanoTime);
  }

  /** With a clock in nanoseconds (tests). */
  RoutingTable(LongSupplier clock) {
    this.clock = clock;
  }

  long now() {
    return clock.getAsLong();
  }

  /** Replica {@code index} of {@code model}, created on first use. */
  View view(String model, int index) {
    return views
        .computeIfAbsent(model, m -> new ConcurrentHashMap<>())
        .computeIfAbsent(index, View::new);
  }

  /**
   * Applies a replica's report; returns true when the replica should be asked for a snapshot.
   * Reports naming an entity id that is not {@code <model>#<index>} are ignored.
   */
  boolean apply(CacheReport report) {
    ReplicaId id;
    try {
      id = ModelWorkerProtocol.parseEntityId(report.replica());
    } catch (IllegalArgumentException e) {
      return false;
    }
    return view(id.model(), id.replica()).apply(report, now());
  }

  /** Tokens per KV block of {@code model}'s replicas as reported, 0 before any report. */
  int blockSize(String model) {
    Map<Integer, View> replicas = views.get(model);
    if (replicas == null) return 0;
    for (View v : replicas.values()) if (v.blockSize() > 0) return v.blockSize();
    return 0;
  }

  /** Counts a request routed to a replica until the lease is closed. */
  ReplicaSelector.Lease started(String model, int replica, long promptBlocks) {
    return view(model, replica).start(promptBlocks);
  }

  /** One replica as this gateway sees it. */
  static final class View {
    private final int index;
    private final Set<BlockHash> blocks = new HashSet<>();
    private String incarnation;
    private long seq;
    private int blockSize;
    private ReplicaLoad load;
    private KvRole kvRole;
    private long reportedAtNanos;
    private final AtomicInteger inFlight = new AtomicInteger();
    private final AtomicLong inFlightBlocks = new AtomicLong();

    View(int index) {
      this.index = index;
    }

    int index() {
      return index;
    }

    /**
     * Applies a report. Returns true when what is known may be incomplete and the replica should
     * send a snapshot: a report was lost (a gap in the sequence), or a replica already running when
     * this gateway started.
     */
    synchronized boolean apply(CacheReport r, long nowNanos) {
      load = r.load();
      kvRole = r.kvRole();
      blockSize = r.blockSize();
      reportedAtNanos = nowNanos;
      boolean sameInstance = r.incarnation().equals(incarnation);
      if (sameInstance && r.seq() <= seq) return false; // a duplicate or a late copy
      boolean complete;
      if (r.replace()) {
        blocks.clear();
        complete = true;
      } else if (!sameInstance) {
        blocks.clear();
        complete = r.seq() == 1; // a new instance starts empty: its first report is complete
      } else {
        complete = r.seq() == seq + 1;
      }
      incarnation = r.incarnation();
      seq = r.seq();
      blocks.removeAll(r.removedHashes());
      blocks.addAll(r.storedHashes());
      return !complete;
    }

    /** Whether a report arrived within {@code staleAfterNanos}. */
    synchronized boolean fresh(long nowNanos, long staleAfterNanos) {
      return load != null && nowNanos - reportedAtNanos <= staleAfterNanos;
    }

    /** How many leading blocks of {@code chain} the replica holds. */
    synchronized int cachedBlocks(List<BlockHash> chain) {
      int n = 0;
      while (n < chain.size() && blocks.contains(chain.get(n))) n++;
      return n;
    }

    /** Tokens per block of the replica's cache, 0 before its first report. */
    synchronized int blockSize() {
      return blockSize;
    }

    /**
     * Its role in disaggregated prefill/decode as last reported (however long ago: a role changes
     * only when the replica moves, and then its new node reports), or null before any report.
     */
    synchronized KvRole kvRole() {
      return kvRole;
    }

    /** The last reported load, or null. */
    synchronized ReplicaLoad load() {
      return load;
    }

    /** Hashes known to be cached there. */
    synchronized int numCachedBlocks() {
      return blocks.size();
    }

    /** Requests this gateway sent there that have not ended. */
    int inFlight() {
      return inFlight.get();
    }

    /** Prompt blocks of {@link #inFlight()} requests: this gateway's own estimate of its load. */
    long inFlightBlocks() {
      return inFlightBlocks.get();
    }

    /** Counts a request sent there until the returned lease is closed (idempotently). */
    ReplicaSelector.Lease start(long promptBlocks) {
      inFlight.incrementAndGet();
      inFlightBlocks.addAndGet(promptBlocks);
      AtomicInteger open = new AtomicInteger(1);
      return () -> {
        if (open.getAndSet(0) == 1) {
          inFlight.decrementAndGet();
          inFlightBlocks.addAndGet(-promptBlocks);
        }
      };
    }
  }
}
