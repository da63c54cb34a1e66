package dev.troupe.gateway.routing;

import dev.troupe.protocol.cluster.ModelWorkerProtocol;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.ReplicaId;
import dev.troupe.protocol.kv.CacheReports.CacheReport;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

/**
 * The gateway's view of every replica of every model ({@link ReplicaView}), fed by the replicas'
 * cache reports and by this gateway's own requests. Thread-safe; one per gateway.
 */
public final class RoutingTable {
  private final Map<String, Map<Integer, ReplicaView>> views = new ConcurrentHashMap<>();
  private final LongSupplier clock;

  public RoutingTable() {
    this(System::nanoTime);
  }

  /** With a clock in nanoseconds (tests). */
  public RoutingTable(LongSupplier clock) {
    this.clock = clock;
  }

  long now() {
    return clock.getAsLong();
  }

  /** Replica {@code index} of {@code model}, created on first use. */
  public ReplicaView view(String model, int index) {
    return views
        .computeIfAbsent(model, m -> new ConcurrentHashMap<>())
        .computeIfAbsent(index, ReplicaView::new);
  }

  /**
   * Applies a replica's report; returns true when the replica should be asked for a snapshot.
   * Reports naming an entity id that is not {@code <model>#<index>} are ignored.
   */
  public boolean apply(CacheReport report) {
    ReplicaId id;
    try {
      id = ModelWorkerProtocol.parseEntityId(report.replica());
    } catch (IllegalArgumentException e) {
      return false;
    }
    return view(id.model(), id.replica()).apply(report, now());
  }

  /** Tokens per KV block of {@code model}'s replicas as reported, 0 before any report. */
  public int blockSize(String model) {
    Map<Integer, ReplicaView> replicas = views.get(model);
    if (replicas == null) return 0;
    for (ReplicaView v : replicas.values()) if (v.blockSize() > 0) return v.blockSize();
    return 0;
  }

  /** Counts a request routed to a replica until the lease is closed. */
  public ReplicaView.Lease started(String model, int replica, long promptBlocks) {
    return view(model, replica).start(promptBlocks);
  }
}
