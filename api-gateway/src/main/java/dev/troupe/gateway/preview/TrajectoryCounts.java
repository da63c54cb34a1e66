package dev.troupe.gateway.preview;

import dev.troupe.protocol.cluster.TrainableModelProtocol;
import dev.troupe.protocol.cluster.TrainableModelProtocol.ModelInfo;
import dev.troupe.protocol.cluster.TrajectoryLogProtocol;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * How many groups and trajectories are logged, per trainable model and split, for the cluster view
 * and the metrics: the registry lists the models (at most {@link #MAX_MODELS}), each model's
 * trajectory log counts its own.
 */
public final class TrajectoryCounts {
  /** Models read; a cluster with more shows the first ones (creation order). */
  static final int MAX_MODELS = 1000;

  private static final int PAGE = 100;

  private final PreviewContext ctx;
  private final Duration timeout;

  public TrajectoryCounts(PreviewContext ctx, Duration timeout) {
    this.ctx = ctx;
    this.timeout = timeout;
  }

  /**
   * One split of one model.
   *
   * @param model the model's {@code entity/project/name}
   */
  public record Row(String modelId, String model, String split, long groups, long trajectories) {}

  /** Every model's splits, models in creation order, splits by name. */
  public CompletionStage<List<Row>> all() {
    return models(null, new ArrayList<>())
        .thenCompose(
            models -> {
              List<CompletableFuture<List<Row>>> each = new ArrayList<>();
              for (ModelInfo m : models) each.add(of(m).toCompletableFuture());
              return CompletableFuture.allOf(each.toArray(CompletableFuture[]::new))
                  .thenApply(
                      done -> {
                        List<Row> rows = new ArrayList<>();
                        for (var f : each) rows.addAll(f.join());
                        return rows;
                      });
            });
  }

  private CompletionStage<List<ModelInfo>> models(String after, List<ModelInfo> found) {
    return ctx.<TrainableModelProtocol.ModelPage>askRegistry(
            r -> new TrainableModelProtocol.ListModels(after, PAGE, r))
        .thenCompose(
            page -> {
              found.addAll(page.data());
              if (!page.hasMore() || page.data().isEmpty() || found.size() >= MAX_MODELS)
                return CompletableFuture.completedFuture(
                    found.size() > MAX_MODELS ? found.subList(0, MAX_MODELS) : found);
              return models(page.data().get(page.data().size() - 1).id(), found);
            });
  }

  private CompletionStage<List<Row>> of(ModelInfo m) {
    String name = m.entity() + "/" + m.project() + "/" + m.name();
    return ctx.<TrajectoryLogProtocol.Counts>askLog(
            m.id(), TrajectoryLogProtocol.GetCounts::new, timeout)
        .thenApply(
            counts ->
                counts.splits().entrySet().stream()
                    .sorted(java.util.Map.Entry.comparingByKey())
                    .map(
                        e ->
                            new Row(
                                m.id(),
                                name,
                                e.getKey(),
                                e.getValue().groups(),
                                e.getValue().trajectories()))
                    .toList());
  }
}
