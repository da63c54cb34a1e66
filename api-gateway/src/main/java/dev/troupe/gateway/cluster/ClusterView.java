package dev.troupe.gateway.cluster;

import dev.troupe.gateway.http.Stages;
import dev.troupe.gateway.preview.TrajectoryCounts;
import dev.troupe.gateway.preview.training.TrainingJobs;
import dev.troupe.protocol.api.cluster.ClusterResponse;
import dev.troupe.protocol.api.preview.training.TrainingJobSummary;
import dev.troupe.protocol.cluster.ClusterViewProtocol;
import dev.troupe.protocol.cluster.ClusterViewProtocol.NodeReport;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.ReplicaId;
import dev.troupe.protocol.cluster.TrainingJobProtocol.Status;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.apache.pekko.actor.typed.receptionist.Receptionist;
import org.apache.pekko.cluster.Member;
import org.apache.pekko.cluster.typed.Cluster;

/**
 * The cluster as one gateway sees it now ({@code GET /v1/cluster}, the dashboard, {@code troupe
 * status}, the {@code troupe:} metrics), gathered at each call from its sources, all asked at once:
 *
 * <ul>
 *   <li>members: this node's Pekko Cluster state (status, reachability, roles, app version);
 *   <li>each node's own report ({@link ClusterViewProtocol}: start time, JVM, hosted replicas),
 *       found through the receptionist;
 *   <li>shard regions cluster-wide ({@link ShardingStats});
 *   <li>training jobs ({@link TrainingJobs}) and trajectory-log counts ({@link TrajectoryCounts}).
 * </ul>
 *
 * <p>A source that does not answer within the timeout is left out and named in {@code unanswered}:
 * the view never fails because a node is slow or gone. Holds no state; thread-safe.
 */
public final class ClusterView {
  /** Newest training jobs in the view. */
  static final int RECENT_JOBS = 10;

  private final ActorSystem<?> system;
  private final List<ReplicaId> configured;
  private final Duration timeout;
  private final TrainingJobs jobs;
  private final TrajectoryCounts logs;

  /**
   * @param configured every replica the served models are configured with (shown even when no node
   *     reports it)
   * @param timeout how long each source may take
   * @param jobs the training jobs, or null where there are none to show (tests)
   * @param logs the trajectory logs, or null
   */
  public ClusterView(
      ActorSystem<?> system,
      List<ReplicaId> configured,
      Duration timeout,
      TrainingJobs jobs,
      TrajectoryCounts logs) {
    this.system = system;
    this.configured = List.copyOf(configured);
    this.timeout = timeout;
    this.jobs = jobs;
    this.logs = logs;
  }

  public ActorSystem<?> system() {
    return system;
  }

  public List<ReplicaId> configured() {
    return configured;
  }

  /** Every reachable node's report; the ones that did not answer are added to {@code missing}. */
  public CompletionStage<List<NodeReport>> nodeReports(List<String> missing) {
    return Stages.on(
            system,
            AskPattern.<Receptionist.Command, Receptionist.Listing>ask(
                system.receptionist(),
                r -> Receptionist.find(ClusterViewProtocol.NODE_REPORTERS, r),
                timeout,
                system.scheduler()))
        .thenCompose(
            listing -> {
              List<CompletableFuture<NodeReport>> asks = new ArrayList<>();
              for (ActorRef<ClusterViewProtocol.Command> reporter :
                  listing.getServiceInstances(ClusterViewProtocol.NODE_REPORTERS))
                asks.add(
                    Stages.on(
                            system,
                            AskPattern.<ClusterViewProtocol.Command, NodeReport>ask(
                                reporter,
                                ClusterViewProtocol.DescribeNode::new,
                                timeout,
                                system.scheduler()))
                        .handle(
                            (report, error) -> {
                              if (error == null) return report;
                              missing.add(
                                  "node "
                                      + ClusterViewProtocol.nodeName(reporter.path().address())
                                      + " did not describe itself within "
                                      + seconds(timeout));
                              return null;
                            })
                        .toCompletableFuture());
              return CompletableFuture.allOf(asks.toArray(CompletableFuture[]::new))
                  .thenApply(
                      done ->
                          asks.stream()
                              .map(CompletableFuture::join)
                              .filter(r -> r != null)
                              .sorted(java.util.Comparator.comparing(NodeReport::node))
                              .toList());
            });
  }

  /** The whole view. */
  public CompletionStage<ClusterResponse> snapshot() {
    List<String> missing = new CopyOnWriteArrayList<>();
    CompletableFuture<List<NodeReport>> nodes =
        nodeReports(missing)
            .exceptionally(e -> note(missing, "the receptionist", e, List.of()))
            .toCompletableFuture();
    CompletableFuture<List<ClusterResponse.ShardType>> shards =
        ShardingStats.all(system, timeout)
            .exceptionally(e -> note(missing, "sharding", e, List.of()))
            .toCompletableFuture();
    CompletableFuture<ClusterResponse.TrainingJobs> training = training(missing);
    CompletableFuture<List<ClusterResponse.TrajectoryLog>> trajectories =
        logs == null
            ? CompletableFuture.completedFuture(List.of())
            : logs.all()
                .thenApply(
                    rows ->
                        rows.stream()
                            .map(
                                r ->
                                    new ClusterResponse.TrajectoryLog(
                                        r.modelId(),
                                        r.model(),
                                        r.split(),
                                        r.groups(),
                                        r.trajectories()))
                            .toList())
                .exceptionally(e -> note(missing, "the trajectory logs", e, List.of()))
                .toCompletableFuture();
    return CompletableFuture.allOf(nodes, shards, training, trajectories)
        .thenApply(
            done -> {
              var members = members(nodes.join());
              return new ClusterResponse(
                  "cluster",
                  System.currentTimeMillis() / 1000,
                  ClusterViewProtocol.nodeName(Cluster.get(system).selfMember().address()),
                  leader(),
                  members,
                  shards.join(),
                  ReportedReplicas.of(configured, nodes.join()),
                  training.join(),
                  trajectories.join(),
                  List.copyOf(missing));
            });
  }

  private CompletableFuture<ClusterResponse.TrainingJobs> training(List<String> missing) {
    if (jobs == null)
      return CompletableFuture.completedFuture(
          new ClusterResponse.TrainingJobs(Map.of(), List.of()));
    CompletableFuture<Map<String, Integer>> counts =
        jobs.counts()
            .thenApply(
                c -> {
                  Map<String, Integer> out = new LinkedHashMap<>();
                  c.forEach((s, n) -> out.put(s.name().toLowerCase(Locale.ROOT), n));
                  return out;
                })
            .exceptionally(e -> note(missing, "the training jobs", e, Map.<String, Integer>of()))
            .toCompletableFuture();
    CompletableFuture<List<TrainingJobSummary>> recent =
        jobs.list(null, RECENT_JOBS, true, (Status) null)
            .thenApply(TrainingJobs.Page::data)
            .exceptionally(e -> note(missing, "the training jobs", e, List.of()))
            .toCompletableFuture();
    return counts.thenCombine(recent, ClusterResponse.TrainingJobs::new);
  }

  /** Training jobs, for the training metrics; null where the view has none. */
  public TrainingJobs jobs() {
    return jobs;
  }

  /** Trajectory-log counts, for the metrics; null where the view has none. */
  public TrajectoryCounts logs() {
    return logs;
  }

  private List<ClusterResponse.Member> members(List<NodeReport> reports) {
    Map<String, NodeReport> byNode = new LinkedHashMap<>();
    for (NodeReport r : reports) byNode.put(r.node(), r);
    var state = Cluster.get(system).state();
    java.util.Set<Member> unreachable = state.getUnreachable();
    List<ClusterResponse.Member> out = new ArrayList<>();
    for (Member m : state.getMembers()) {
      String node = ClusterViewProtocol.nodeName(m.address());
      NodeReport r = byNode.get(node);
      List<String> roles =
          m.getRoles().stream().filter(role -> !role.startsWith("dc-")).sorted().toList();
      out.add(
          new ClusterResponse.Member(
              node,
              roles,
              memberStatus(m),
              !unreachable.contains(m),
              m.appVersion().toString(),
              r == null ? null : r.startedAtMillis() / 1000,
              r != null && r.draining(),
              r == null
                  ? null
                  : new ClusterResponse.Jvm(
                      r.jvm().processors(),
                      r.jvm().heapUsedBytes(),
                      r.jvm().heapMaxBytes(),
                      r.jvm().systemLoadAverage()),
              r == null
                  ? List.of()
                  : r.replicas().stream().map(ClusterViewProtocol.ReplicaReport::id).toList()));
    }
    return out;
  }

  private String leader() {
    var leader = Cluster.get(system).state().getLeader();
    return leader == null ? null : ClusterViewProtocol.nodeName(leader);
  }

  /** Pekko's member status in snake case: {@code up}, {@code weakly_up}, {@code leaving}, ... */
  static String memberStatus(Member m) {
    return m.status().toString().replaceAll("([a-z])([A-Z])", "$1_$2").toLowerCase(Locale.ROOT);
  }

  private static <T> T note(List<String> missing, String what, Throwable e, T fallback) {
    Throwable cause =
        e instanceof java.util.concurrent.CompletionException && e.getCause() != null
            ? e.getCause()
            : e;
    missing.add(what + " did not answer: " + cause.getMessage());
    return fallback;
  }

  static String seconds(Duration d) {
    return d.toMillis() % 1000 == 0 ? d.toSeconds() + " s" : d.toMillis() + " ms";
  }
}
