package dev.troupe.gateway.metrics;

import static org.apache.pekko.http.javadsl.server.Directives.complete;
import static org.apache.pekko.http.javadsl.server.Directives.get;
import static org.apache.pekko.http.javadsl.server.Directives.onSuccess;
import static org.apache.pekko.http.javadsl.server.Directives.path;

import dev.troupe.gateway.http.ApiRoute;
import dev.troupe.gateway.replicas.ModelCatalog;
import dev.troupe.gateway.replicas.ServedModel;
import dev.troupe.protocol.cluster.ModelWorkerProtocol;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Command;
import dev.troupe.protocol.cluster.WorkerStatus;
import dev.troupe.protocol.cluster.WorkerStatus.Histogram;
import dev.troupe.protocol.cluster.WorkerStatus.Latencies;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.snapshots.ClassicHistogramBuckets;
import io.prometheus.metrics.model.snapshots.CounterSnapshot;
import io.prometheus.metrics.model.snapshots.CounterSnapshot.CounterDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot.GaugeDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.HistogramSnapshot;
import io.prometheus.metrics.model.snapshots.HistogramSnapshot.HistogramDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.Labels;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Function;
import java.util.function.ToDoubleFunction;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.apache.pekko.http.javadsl.model.ContentType;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.server.Route;

/**
 * {@code GET /metrics}: Prometheus text exposition with vLLM's metric names, open without an API
 * key as in vLLM. At every scrape each replica of each served model is asked for its {@link
 * WorkerStatus}; its scheduler gauges ({@code vllm:num_requests_running/waiting}, {@code
 * vllm:kv_cache_usage_perc}), counters ({@code vllm:num_preemptions_total}, {@code
 * vllm:prompt_tokens_total}, {@code vllm:generation_tokens_total}, {@code
 * vllm:prefix_cache_queries_total}, {@code vllm:prefix_cache_hits_total}) and engine-clock latency
 * histograms ({@code vllm:request_queue_time_seconds}, {@code vllm:request_prefill_time_seconds},
 * {@code vllm:request_decode_time_seconds}, {@code vllm:request_inference_time_seconds}, {@code
 * vllm:inter_token_latency_seconds}) are one series per replica, labelled {@code model_name} and
 * {@code engine} (the replica index, vLLM's label for its data-parallel engines). A replica that
 * does not answer within the scrape timeout, or has no model loaded, is left out of that scrape:
 * the endpoint never fails because a worker is down. The gateway's own request metrics ({@link
 * ServingMetrics}) follow.
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
  private final PrometheusTextFormatWriter writer = new PrometheusTextFormatWriter(false);

  /**
   * @param scrapeTimeout how long each replica may take to report its status
   */
  public MetricsRoute(ModelCatalog models, ServingMetrics serving, Duration scrapeTimeout) {
    this.models = models;
    this.serving = serving;
    this.scrapeTimeout = scrapeTimeout;
  }

  @Override
  public Route route() {
    return path(
        "metrics",
        () ->
            get(
                () ->
                    onSuccess(
                        workerStatuses(),
                        statuses ->
                            complete(
                                HttpResponse.create()
                                    .withEntity(
                                        HttpEntities.create(TEXT_FORMAT, exposition(statuses)))))));
  }

  /** A replica's status, or nothing when it did not answer in time. */
  private record Replica(String model, int index, WorkerStatus status) {}

  private CompletionStage<List<Replica>> workerStatuses() {
    List<CompletableFuture<Replica>> asks = new ArrayList<>();
    for (ServedModel m : models.models())
      for (int i = 0; i < m.replicas(); i++) {
        int index = i;
        asks.add(
            AskPattern.<Command, WorkerStatus>ask(
                    models.replicas().replica(m, i).ref(),
                    ModelWorkerProtocol.GetStatus::new,
                    scrapeTimeout,
                    models.system().scheduler())
                .handle((s, error) -> error == null ? new Replica(m.name(), index, s) : null)
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

  private byte[] exposition(List<Replica> replicas) {
    MetricSnapshots.Builder all = MetricSnapshots.builder();
    all.metricSnapshot(
        gauge(
            "vllm:num_requests_running",
            "Number of requests in model execution batches.",
            replicas,
            s -> s.running()));
    all.metricSnapshot(
        gauge(
            "vllm:num_requests_waiting",
            "Number of requests waiting to be processed.",
            replicas,
            s -> s.waiting()));
    all.metricSnapshot(
        counter(
            "vllm:num_preemptions",
            "Cumulative number of preemptions from the engine.",
            replicas,
            s -> s.preemptions()));
    all.metricSnapshot(
        counter(
            "vllm:prompt_tokens",
            "Number of prefill tokens processed.",
            replicas,
            s -> s.promptTokens()));
    all.metricSnapshot(
        counter(
            "vllm:generation_tokens",
            "Number of generation tokens processed.",
            replicas,
            s -> s.generationTokens()));
    all.metricSnapshot(
        gauge(
            "vllm:kv_cache_usage_perc",
            "KV-cache usage. 1 means 100 percent usage.",
            replicas,
            WorkerStatus::kvCacheUsage));
    all.metricSnapshot(
        counter(
            "vllm:prefix_cache_queries",
            "Prefix cache queries, in terms of number of queried tokens.",
            replicas,
            s -> s.prefixCacheQueries()));
    all.metricSnapshot(
        counter(
            "vllm:prefix_cache_hits",
            "Prefix cache hits, in terms of number of cached tokens.",
            replicas,
            s -> s.prefixCacheHits()));
    all.metricSnapshot(
        histogram(
            "vllm:request_queue_time_seconds",
            "Histogram of time spent in WAITING phase for request.",
            replicas,
            Latencies::queue));
    all.metricSnapshot(
        histogram(
            "vllm:request_prefill_time_seconds",
            "Histogram of time spent in PREFILL phase for request.",
            replicas,
            Latencies::prefill));
    all.metricSnapshot(
        histogram(
            "vllm:request_decode_time_seconds",
            "Histogram of time spent in DECODE phase for request.",
            replicas,
            Latencies::decode));
    all.metricSnapshot(
        histogram(
            "vllm:request_inference_time_seconds",
            "Histogram of time spent in RUNNING phase for request.",
            replicas,
            Latencies::inference));
    all.metricSnapshot(
        histogram(
            "vllm:inter_token_latency_seconds",
            "Histogram of inter-token latency in seconds.",
            replicas,
            Latencies::interToken));
    serving.scrape().forEach(all::metricSnapshot);
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try {
      writer.write(out, all.build());
    } catch (IOException e) {
      throw new UncheckedIOException("writing to memory cannot fail", e);
    }
    return out.toByteArray();
  }

  private static Labels labels(Replica r) {
    return Labels.of("model_name", r.model(), "engine", Integer.toString(r.index()));
  }

  private static GaugeSnapshot gauge(
      String name, String help, List<Replica> replicas, ToDoubleFunction<WorkerStatus> value) {
    GaugeSnapshot.Builder b = GaugeSnapshot.builder().name(name).help(help);
    for (Replica r : replicas)
      b.dataPoint(
          GaugeDataPointSnapshot.builder()
              .labels(labels(r))
              .value(value.applyAsDouble(r.status()))
              .build());
    return b.build();
  }

  /** A replica's engine-clock histogram; replicas without latencies are left out. */
  private static HistogramSnapshot histogram(
      String name, String help, List<Replica> replicas, Function<Latencies, Histogram> which) {
    HistogramSnapshot.Builder b = HistogramSnapshot.builder().name(name).help(help);
    for (Replica r : replicas) {
      Latencies l = r.status().latencies();
      if (l == null) continue;
      Histogram h = which.apply(l);
      double[] bounds = java.util.Arrays.copyOf(h.bounds(), h.bounds().length + 1);
      bounds[bounds.length - 1] = Double.POSITIVE_INFINITY;
      b.dataPoint(
          HistogramDataPointSnapshot.builder()
              .labels(labels(r))
              .classicHistogramBuckets(ClassicHistogramBuckets.of(bounds, h.counts()))
              .sum(h.sum())
              .build());
    }
    return b.build();
  }

  /** {@code name} without {@code _total}: the text format adds it to counters. */
  private static CounterSnapshot counter(
      String name, String help, List<Replica> replicas, ToDoubleFunction<WorkerStatus> value) {
    CounterSnapshot.Builder b = CounterSnapshot.builder().name(name).help(help);
    for (Replica r : replicas)
      b.dataPoint(
          CounterDataPointSnapshot.builder()
              .labels(labels(r))
              .value(value.applyAsDouble(r.status()))
              .build());
    return b.build();
  }
}
