package dev.troupe.gateway.routes;

import dev.troupe.gateway.chat.MigrationSettings;
import dev.troupe.gateway.http.ApiRoute;
import dev.troupe.gateway.metrics.MetricsRoute;
import dev.troupe.gateway.metrics.ServingMetrics;
import dev.troupe.gateway.replicas.ModelCatalog;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;
import java.time.Duration;
import java.util.List;

/**
 * The OpenAI/vLLM endpoints served by every gateway, for {@code ApiRoutes.addAll}:
 *
 * <pre>{@code
 * ReplicaSelector replicas = ReplicaSelector.sharded(system, names, routing, metrics, tokenizer, ask);
 * ModelCatalog models = ModelCatalog.of(servedModels, replicas, settings.askTimeout());
 * Route route =
 *     ApiRoutes.builder(settings).addAll(StandardRoutes.of(models, metrics, migration, health)).build();
 * GatewayServer.bind(system, settings, route);
 * }</pre>
 */
public final class StandardRoutes {
  private StandardRoutes() {}

  /** A status ask slower than this leaves that replica out of a {@code GET /metrics} scrape. */
  private static final Duration SCRAPE_TIMEOUT = Duration.ofSeconds(2);

  public static List<ApiRoute> of(ModelCatalog models) {
    return of(models, new ServingMetrics());
  }

  /**
   * With the gateway's request metrics: pass the {@link ServingMetrics} the models' router records
   * its decisions into, so they show in {@code /metrics} with the rest.
   */
  public static List<ApiRoute> of(ModelCatalog models, ServingMetrics metrics) {
    return of(models, metrics, MigrationSettings.DISABLED, models::healthy);
  }

  /**
   * With requests migrated as {@code migration} says, and {@code GET /health} answering {@code
   * health} (a node's readiness, which also fails while the node drains) instead of the models'
   * {@link ModelCatalog#healthy()} alone.
   */
  public static List<ApiRoute> of(
      ModelCatalog models,
      ServingMetrics metrics,
      MigrationSettings migration,
      java.util.function.Supplier<java.util.concurrent.CompletionStage<Boolean>> health) {
    return of(
        models,
        metrics,
        migration,
        health,
        () -> java.util.concurrent.CompletableFuture.completedFuture(MetricSnapshots.of()));
  }

  /**
   * As above, with {@code GET /metrics} also writing the families {@code moreMetrics} gathers at
   * each scrape (a cluster node's {@code troupe:} families).
   */
  public static List<ApiRoute> of(
      ModelCatalog models,
      ServingMetrics metrics,
      MigrationSettings migration,
      java.util.function.Supplier<java.util.concurrent.CompletionStage<Boolean>> health,
      java.util.function.Supplier<java.util.concurrent.CompletionStage<MetricSnapshots>>
          moreMetrics) {
    Duration scrapeTimeout =
        models.askTimeout().compareTo(SCRAPE_TIMEOUT) < 0 ? models.askTimeout() : SCRAPE_TIMEOUT;
    return List.of(
        new ChatCompletionsRoute(models, metrics, migration),
        new CompletionsRoute(models, metrics, migration),
        new MetricsRoute(models, metrics, scrapeTimeout, moreMetrics),
        new ModelsRoute(models),
        new RetrieveModelRoute(models),
        new TokenizeRoute(models),
        new DetokenizeRoute(models),
        new HealthRoute(health),
        new VersionRoute());
  }
}
