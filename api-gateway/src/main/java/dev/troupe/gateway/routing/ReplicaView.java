package dev.troupe.gateway.routing;

import dev.troupe.protocol.kv.BlockHash;
import dev.troupe.protocol.kv.CacheReports.CacheReport;
import dev.troupe.protocol.kv.CacheReports.ReplicaLoad;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * What this gateway knows of one replica: the block hashes its prefix cache holds and its load as
 * last reported ({@link CacheReport}), and the requests this gateway has in flight on it (known at
 * once, while reports lag by up to a publish interval).
 *
 * <p>Thread-safe: reports arrive on an actor, routing reads from request threads.
 */
public final class ReplicaView {
  private final int index;
  private final Set<BlockHash> blocks = new HashSet<>();
  private String incarnation;
  private long seq;
  private int blockSize;
  private ReplicaLoad load;
  private long reportedAtNanos;
  private final AtomicInteger inFlight = new AtomicInteger();
  private final AtomicLong inFlightBlocks = new AtomicLong();

  ReplicaView(int index) {
    this.index = index;
  }

  public int index() {
    return index;
  }

  /**
   * Applies a report. Returns true when what is known may be incomplete and the replica should send
   * a snapshot: a report was lost (a gap in the sequence), or a replica already running when this
   * gateway started.
   */
  synchronized boolean apply(CacheReport r, long nowNanos) {
    load = r.load();
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

  /** The last reported load, or null. */
  synchronized ReplicaLoad load() {
    return load;
  }

  /** Hashes known to be cached there. */
  synchronized int numCachedBlocks() {
    return blocks.size();
  }

  /** Forgets the replica's cache (it stopped reporting). */
  synchronized void forget() {
    blocks.clear();
    incarnation = null;
    seq = 0;
    load = null;
  }

  /** Requests this gateway sent there that have not ended. */
  public int inFlight() {
    return inFlight.get();
  }

  /** Prompt blocks of {@link #inFlight()} requests: this gateway's own estimate of its load. */
  public long inFlightBlocks() {
    return inFlightBlocks.get();
  }

  /** Counts a request sent there until the returned lease is closed (idempotently). */
  Lease start(long promptBlocks) {
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

  /** A request's hold on a replica's in-flight count. */
  public interface Lease extends AutoCloseable {
    @Override
    void close();
  }
}
