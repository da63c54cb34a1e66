package dev.troupe.gateway.cluster;

import dev.troupe.gateway.preview.TrajectoryCounts;
import dev.troupe.gateway.preview.training.TrainingJobs;
import dev.troupe.protocol.api.preview.training.TrainingJobSummary;
import dev.troupe.protocol.cluster.ClusterViewProtocol.NodeReport;
import dev.troupe.protocol.cluster.ClusterViewProtocol.ReplicaState;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.ReplicaId;
import dev.troupe.protocol.cluster.TrainingJobProtocol.Status;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot.GaugeDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.Labels;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.pekko.cluster.Member;
import org.apache.pekko.cluster.typed.Cluster;

/**
 * The {@code troupe:} families of {@code /metrics}, gathered from the {@link ClusterView} at each
 * scrape: members by status, replicas by state, training jobs by status, the latest job's progress
 * per trainable model, and the logged trajectories. Every status and state is present, at zero when
 * nothing is in it, so a dashboard's panels have series from the first scrape.
 */
public final class ClusterMetrics {
  /** Jobs looked at for each model's latest one, newest first. */
  static final int LATEST_JOBS = 20;

  private static final List<String> MEMBER_STATUSES =
      List.of("joining", "weakly_up", "up", "leaving", "exiting", "down", "removed");

  /** The latest job's gradient-step metrics exposed, and their families. */
  private static final Map<String, String[]> TRAINING =
      Map.of(
          "loss", new String[] {"troupe:training_loss", "Loss of the latest gradient step."},
          "reward",
              new String[] {"troupe:training_reward", "Mean reward of the batch being trained."},
          "grad_norm",
              new String[] {
                "troupe:training_grad_norm", "Gradient norm of the latest gradient step."
              },
          "tokens_per_second",
              new String[] {
                "troupe:training_tokens_per_second",
                "Tokens per second of the latest gradient step."
              });

  private final ClusterView view;

  public ClusterMetrics(ClusterView view) {
    this.view = view;
  }

  /** The families, as of now; parts that do not answer are left out. */
  public CompletionStage<MetricSnapshots> scrape() {
    List<String> missing = new CopyOnWriteArrayList<>();
    CompletableFuture<MetricSnapshots.Builder> nodes =
        view.nodeReports(missing)
            .thenApply(this::clusterFamilies)
            .exceptionally(e -> clusterFamilies(List.of()))
            .toCompletableFuture();
    CompletableFuture<List<GaugeSnapshot>> training = training().toCompletableFuture();
    CompletableFuture<List<GaugeSnapshot>> logs = logs().toCompletableFuture();
    return nodes.thenCombine(
        training.thenCombine(logs, (t, l) -> concat(t, l)),
        (b, more) -> {
          more.forEach(b::metricSnapshot);
          return b.build();
        });
  }

  private MetricSnapshots.Builder clusterFamilies(List<NodeReport> reports) {
    MetricSnapshots.Builder b = MetricSnapshots.builder();
    var state = Cluster.get(view.system()).state();
    Map<String, Double> byStatus = new LinkedHashMap<>();
    for (String s : MEMBER_STATUSES) byStatus.put(s, 0.0);
    int unreachable = 0;
    for (Member m : state.getMembers()) {
      byStatus.merge(ClusterView.memberStatus(m), 1.0, Double::sum);
      if (state.getUnreachable().contains(m)) unreachable++;
    }
    GaugeSnapshot.Builder members =
        GaugeSnapshot.builder()
            .name("troupe:cluster_members")
            .help("Cluster members by Pekko member status.");
    byStatus.forEach((s, n) -> members.dataPoint(point(Labels.of("status", s), n)));
    b.metricSnapshot(members.build());
    b.metricSnapshot(
        GaugeSnapshot.builder()
            .name("troupe:cluster_unreachable_members")
            .help("Members some node's failure detector marks unreachable.")
            .dataPoint(point(Labels.EMPTY, unreachable))
            .build());
    b.metricSnapshot(replicas(reports));
    return b;
  }

  /** Configured replicas by model and state; a replica no node reports is {@code unplaced}. */
  private GaugeSnapshot replicas(List<NodeReport> reports) {
    Map<String, Map<String, Double>> byModel = new TreeMap<>();
    List<String> states = new ArrayList<>();
    for (ReplicaState s : ReplicaState.values()) states.add(s.wireName());
    states.add(ReportedReplicas.UNPLACED);
    Set<String> models = new LinkedHashSet<>();
    for (ReplicaId id : view.configured()) models.add(id.model());
    var hosted = ReportedReplicas.byId(reports);
    for (var h : hosted.values())
      models.add(
          dev.troupe.protocol.cluster.ModelWorkerProtocol.parseEntityId(h.report().id()).model());
    for (String m : models) {
      Map<String, Double> counts = new LinkedHashMap<>();
      for (String s : states) counts.put(s, 0.0);
      byModel.put(m, counts);
    }
    for (ReplicaId id : view.configured())
      if (!hosted.containsKey(id.entityId()))
        byModel.get(id.model()).merge(ReportedReplicas.UNPLACED, 1.0, Double::sum);
    for (var h : hosted.values())
      byModel
          .get(
              dev.troupe.protocol.cluster.ModelWorkerProtocol.parseEntityId(h.report().id())
                  .model())
          .merge(h.report().state().wireName(), 1.0, Double::sum);
    GaugeSnapshot.Builder g =
        GaugeSnapshot.builder()
            .name("troupe:model_replicas")
            .help(
                "Model replicas by state (loading, ready, restarting, draining, failed,"
                    + " unresponsive, unplaced).");
    byModel.forEach(
        (m, counts) ->
            counts.forEach(
                (s, n) -> g.dataPoint(point(Labels.of("model_name", m, "state", s), n))));
    return g.build();
  }

  private CompletionStage<List<GaugeSnapshot>> training() {
    TrainingJobs jobs = view.jobs();
    if (jobs == null) return CompletableFuture.completedFuture(List.of());
    CompletionStage<GaugeSnapshot> counts =
        jobs.counts()
            .thenApply(
                c -> {
                  GaugeSnapshot.Builder g =
                      GaugeSnapshot.builder()
                          .name("troupe:training_jobs")
                          .help("Training jobs by status.");
                  for (Status s : Status.values())
                    g.dataPoint(
                        point(
                            Labels.of("status", s.name().toLowerCase(Locale.ROOT)),
                            c.getOrDefault(s, 0)));
                  return g.build();
                });
    CompletionStage<List<GaugeSnapshot>> latest =
        jobs.list(null, LATEST_JOBS, true, null).thenApply(page -> latestPerModel(page.data()));
    return counts
        .thenCombine(
            latest,
            (c, l) -> {
              List<GaugeSnapshot> all = new ArrayList<>();
              all.add(c);
              all.addAll(l);
              return (List<GaugeSnapshot>) all;
            })
        .exceptionally(e -> List.of());
  }

  /** The newest job of each model: its gradient steps and its latest step's metrics. */
  private static List<GaugeSnapshot> latestPerModel(List<TrainingJobSummary> newestFirst) {
    Map<String, TrainingJobSummary> latest = new LinkedHashMap<>();
    for (TrainingJobSummary j : newestFirst) latest.putIfAbsent(j.modelId(), j);
    GaugeSnapshot.Builder steps =
        GaugeSnapshot.builder()
            .name("troupe:training_gradient_steps")
            .help("Gradient steps done by the latest training job of each model.");
    Map<String, GaugeSnapshot.Builder> families = new LinkedHashMap<>();
    TRAINING.forEach((key, f) -> families.put(key, GaugeSnapshot.builder().name(f[0]).help(f[1])));
    for (TrainingJobSummary j : latest.values()) {
      Labels l = Labels.of("model_id", j.modelId(), "job_id", j.id());
      steps.dataPoint(point(l, j.gradientSteps()));
      families.forEach(
          (key, g) -> {
            Double v = j.latestMetrics().get(key);
            if (v != null) g.dataPoint(point(l, v));
          });
    }
    List<GaugeSnapshot> out = new ArrayList<>();
    out.add(steps.build());
    families.values().forEach(g -> out.add(g.build()));
    return out;
  }

  private CompletionStage<List<GaugeSnapshot>> logs() {
    TrajectoryCounts logs = view.logs();
    if (logs == null) return CompletableFuture.completedFuture(List.of());
    return logs.all()
        .thenApply(
            rows -> {
              GaugeSnapshot.Builder groups =
                  GaugeSnapshot.builder()
                      .name("troupe:logged_trajectory_groups")
                      .help("Trajectory groups logged, per trainable model and split.");
              GaugeSnapshot.Builder trajectories =
                  GaugeSnapshot.builder()
                      .name("troupe:logged_trajectories")
                      .help("Trajectories logged, per trainable model and split.");
              for (TrajectoryCounts.Row r : rows) {
                Labels l = Labels.of("model_id", r.modelId(), "split", r.split());
                groups.dataPoint(point(l, r.groups()));
                trajectories.dataPoint(point(l, r.trajectories()));
              }
              return List.of(groups.build(), trajectories.build());
            })
        .exceptionally(e -> List.of());
  }

  private static GaugeDataPointSnapshot point(Labels labels, double value) {
    return GaugeDataPointSnapshot.builder().labels(labels).value(value).build();
  }

  private static <T> List<T> concat(List<T> a, List<T> b) {
    List<T> out = new ArrayList<>(a);
    out.addAll(b);
    return out;
  }
}
