package dev.troupe.gateway.cluster;

import dev.troupe.protocol.api.cluster.ClusterResponse;
import dev.troupe.protocol.cluster.ClusterViewProtocol.NodeReport;
import dev.troupe.protocol.cluster.ClusterViewProtocol.ReplicaReport;
import dev.troupe.protocol.cluster.ModelWorkerProtocol;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.ReplicaId;
import dev.troupe.protocol.cluster.WorkerStatus;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The view's replica rows: every configured replica, as the node hosting it reports it. */
final class ReportedReplicas {
  /** The state of a configured replica no node reports. */
  static final String UNPLACED = "unplaced";

  private ReportedReplicas() {}

  /** A reported replica and the node that reported it. */
  record Hosted(String node, ReplicaReport report) {}

  /** Reports by replica id; when two nodes report one (a hand-off), a ready one wins. */
  static Map<String, Hosted> byId(List<NodeReport> nodes) {
    Map<String, Hosted> out = new LinkedHashMap<>();
    for (NodeReport n : nodes)
      for (ReplicaReport r : n.replicas())
        out.merge(
            r.id(),
            new Hosted(n.node(), r),
            (a, b) ->
                b.report().state()
                        == dev.troupe.protocol.cluster.ClusterViewProtocol.ReplicaState.READY
                    ? b
                    : a);
    return out;
  }

  static List<ClusterResponse.Replica> of(List<ReplicaId> configured, List<NodeReport> nodes) {
    Map<String, Hosted> hosted = byId(nodes);
    List<ClusterResponse.Replica> out = new ArrayList<>();
    for (ReplicaId id : configured) {
      Hosted h = hosted.remove(id.entityId());
      out.add(h == null ? unplaced(id) : row(h));
    }
    for (Hosted h : hosted.values()) out.add(row(h)); // reported but not configured here
    return out;
  }

  private static ClusterResponse.Replica unplaced(ReplicaId id) {
    return new ClusterResponse.Replica(
        id.entityId(),
        id.model(),
        id.replica(),
        null,
        UNPLACED,
        "no reachable node reports it (it is being placed or moved, or its node is gone)",
        0,
        null,
        List.of(),
        null,
        null,
        null,
        null,
        null,
        null);
  }

  private static ClusterResponse.Replica row(Hosted h) {
    ReplicaReport r = h.report();
    ReplicaId id = ModelWorkerProtocol.parseEntityId(r.id());
    WorkerStatus s = r.status();
    WorkerStatus.Details d = s == null ? null : s.details();
    return new ClusterResponse.Replica(
        r.id(),
        id.model(),
        id.replica(),
        h.node(),
        r.state().wireName(),
        r.reason(),
        r.restarts(),
        d == null
            ? null
            : new ClusterResponse.Device(
                d.device().kind(), d.device().index(), d.device().name(), d.device().memoryBytes()),
        d == null
            ? List.of()
            : d.adapters().stream()
                .map(a -> new ClusterResponse.Adapter(a.name(), a.step()))
                .toList(),
        s == null ? null : new ClusterResponse.Requests(s.running(), s.waiting(), s.preemptions()),
        s == null
            ? null
            : new ClusterResponse.KvCache(s.kvBlocksUsed(), s.kvBlocksTotal(), s.kvCacheUsage()),
        s == null
            ? null
            : new ClusterResponse.PrefixCache(
                s.prefixCacheQueries(), s.prefixCacheHits(), s.prefixCacheHitRate()),
        s == null ? null : new ClusterResponse.Tokens(s.promptTokens(), s.generationTokens()),
        d == null
            ? null
            : new ClusterResponse.Throughput(d.prefillTokensPerSecond(), d.decodeTokensPerSecond()),
        d == null ? null : d.kvRole().wireName());
  }
}
