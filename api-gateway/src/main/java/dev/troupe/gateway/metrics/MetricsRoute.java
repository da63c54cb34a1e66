package dev.troupe.gateway.metrics;

import static org.apache.pekko.http.javadsl.server.Directives.complete;
import static org.apache.pekko.http.javadsl.server.Directives.get;
import static org.apache.pekko.http.javadsl.server.Directives.onSuccess;
import static org.apache.pekko.http.javadsl.server.Directives.path;

import dev.troupe.gateway.http.ApiRoute;
import dev.troupe.gateway.http.Stages;
import dev.troupe.gateway.replicas.ModelCatalog;
import dev.troupe.gateway.replicas.ServedModel;
import dev.troupe.protocol.cluster.ModelWorkerProtocol;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Command;
import dev.troupe.protocol.cluster.WorkerStatus;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.apache.pekko.http.javadsl.model.ContentType;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.server.Route;

/**
 * {@code GET /metrics}: Prometheus text exposition with vLLM's metric names, open without an API
 * key when so configured. At every scrape each replica of each served model is asked for its {@link
 * WorkerStatus}: the families it feeds ({@link WorkerMetrics}: scheduler gauges, token and
 * prefix-cache counters, engine-clock latency and token histograms) are one series per replica,
 * labelled {@code model_name}, {@code engine} (the replica index, vLLM's label for its
 * data-parallel engines), {@code replica} and {@code node}. A replica that does not answer within
 * the scrape timeout, or has no model loaded, is left out of that scrape: the endpoint never fails
 * because a worker is down. The gateway's own request metrics ({@link ServingMetrics}) and, on a
 * cluster node, the {@code troupe:} cluster and training families follow.
 */
public final class MetricsRoute implements ApiRoute {
  /**
   * {@code text/plain; version=0.0.4; charset=UTF-8}, what Prometheus expects of the text format.
   */
  private static final ContentType TEXT_FORMAT =
      ContentTypes.parse("text/plain; version=0.0.4; charset=UTF-8");

  private final ModelCatalog models;
  private final ServingMetrics serving;
  private final Duration scrapeTimeout;
  private final Supplier<CompletionStage<MetricSnapshots>> more;
  private final PrometheusTextFormatWriter writer = new PrometheusTextFormatWriter(false);

  /**
   * @param scrapeTimeout how long each replica may take to report its status
   */
  public MetricsRoute(ModelCatalog models, ServingMetrics serving, Duration scrapeTimeout) {
    this(
        models,
        serving,
        scrapeTimeout,
        () -> CompletableFuture.completedFuture(MetricSnapshots.of()));
  }

  /**
   * @param more further families gathered at each scrape (the cluster's {@code troupe:} families);
   *     a failure leaves them out of that scrape
   */
  public MetricsRoute(
      ModelCatalog models,
      ServingMetrics serving,
      Duration scrapeTimeout,
      Supplier<CompletionStage<MetricSnapshots>> more) {
    this.models = models;
    this.serving = serving;
    this.scrapeTimeout = scrapeTimeout;
    this.more = more;
  }

  @Override
  public Route route() {
    return path(
        "metrics",
        () ->
            get(
                () ->
                    onSuccess(
                        workerStatuses()
                            .thenCombine(
                                more.get().exceptionally(e -> MetricSnapshots.of()),
                                this::exposition),
                        text ->
                            complete(
                                HttpResponse.create()
                                    .withEntity(HttpEntities.create(TEXT_FORMAT, text))))));
  }

  private CompletionStage<List<WorkerMetrics.Replica>> workerStatuses() {
    List<CompletableFuture<WorkerMetrics.Replica>> asks = new ArrayList<>();
    for (ServedModel m : models.models())
      for (int i = 0; i < m.replicas(); i++) {
        int index = i;
        asks.add(
            Stages.on(
                    models.system(),
                    AskPattern.<Command, WorkerStatus>ask(
                        models.replicas().replica(m, i).ref(),
                        ModelWorkerProtocol.GetStatus::new,
                        scrapeTimeout,
                        models.system().scheduler()))
                .handle(
                    (s, error) ->
                        error == null ? new WorkerMetrics.Replica(m.name(), index, s) : null)
                .toCompletableFuture());
      }
    return CompletableFuture.allOf(asks.toArray(CompletableFuture[]::new))
        .thenApply(
            done ->
                asks.stream()
                    .map(CompletableFuture::join)
                    // A replica whose model failed to load reports a context length of 0 and serves
                    // nothing.
                    .filter(r -> r != null && r.status().maxModelLen() > 0)
                    .toList());
  }

  private byte[] exposition(List<WorkerMetrics.Replica> replicas, MetricSnapshots cluster) {
    MetricSnapshots.Builder all = MetricSnapshots.builder();
    WorkerMetrics.add(all, replicas);
    serving.scrape().forEach(all::metricSnapshot);
    cluster.forEach(all::metricSnapshot);
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try {
      writer.write(out, all.build());
      out.write(WorkerMetrics.iterationTokens(replicas).getBytes(StandardCharsets.UTF_8));
    } catch (IOException e) {
      throw new UncheckedIOException("writing to memory cannot fail", e);
    }
    return out.toByteArray();
  }
}
