package dev.troupe.gateway.metrics;

import dev.troupe.protocol.cluster.WorkerStatus;
import dev.troupe.protocol.cluster.WorkerStatus.Histogram;
import dev.troupe.protocol.cluster.WorkerStatus.Latencies;
import dev.troupe.protocol.cluster.WorkerStatus.Tokens;
import io.prometheus.metrics.model.snapshots.ClassicHistogramBuckets;
import io.prometheus.metrics.model.snapshots.CounterSnapshot;
import io.prometheus.metrics.model.snapshots.CounterSnapshot.CounterDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot.GaugeDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.HistogramSnapshot;
import io.prometheus.metrics.model.snapshots.HistogramSnapshot.HistogramDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.Labels;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.function.Function;
import java.util.function.ToDoubleFunction;

/**
 * The families each model replica reports in its {@link WorkerStatus}, under vLLM's names and with
 * its buckets: scheduler gauges, token and prefix-cache counters, the engine-clock latency
 * histograms and the per-request token histograms. One series per replica, labelled {@code
 * model_name} and {@code engine} (the replica index: vLLM's label for its data-parallel engines),
 * {@code replica} (its id, {@code <model>#<index>}) and {@code node} (the node hosting it, when it
 * says).
 */
final class WorkerMetrics {
  private WorkerMetrics() {}

  /** A replica's status as one scrape got it. */
  record Replica(String model, int index, WorkerStatus status) {}

  static Labels labels(Replica r) {
    WorkerStatus.Details d = r.status().details();
    Labels l =
        Labels.of(
            "model_name",
            r.model(),
            "engine",
            Integer.toString(r.index()),
            "replica",
            replicaId(r));
    return d == null || d.node() == null ? l : l.add("node", d.node());
  }

  private static String replicaId(Replica r) {
    return r.model() + "#" + r.index();
  }

  static void add(MetricSnapshots.Builder all, List<Replica> replicas) {
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
    latency(all, "vllm:request_queue_time_seconds", "WAITING", replicas, Latencies::queue);
    latency(all, "vllm:request_prefill_time_seconds", "PREFILL", replicas, Latencies::prefill);
    latency(all, "vllm:request_decode_time_seconds", "DECODE", replicas, Latencies::decode);
    latency(all, "vllm:request_inference_time_seconds", "RUNNING", replicas, Latencies::inference);
    all.metricSnapshot(
        histogram(
            "vllm:inter_token_latency_seconds",
            "Histogram of inter-token latency in seconds.",
            replicas,
            Latencies::interToken));
    all.metricSnapshot(
        tokens(
            "vllm:request_time_per_output_token_seconds",
            "Histogram of time_per_output_token_seconds per request.",
            replicas,
            Tokens::timePerOutputToken));
    all.metricSnapshot(
        tokens(
            "vllm:request_prompt_tokens",
            "Number of prefill tokens processed.",
            replicas,
            Tokens::promptTokens));
    all.metricSnapshot(
        tokens(
            "vllm:request_generation_tokens",
            "Number of generation tokens processed.",
            replicas,
            Tokens::generationTokens));
    all.metricSnapshot(
        tokens(
            "vllm:request_max_num_generation_tokens",
            "Histogram of maximum number of requested generation tokens.",
            replicas,
            Tokens::maxGenerationTokens));
    all.metricSnapshot(
        tokens(
            "vllm:request_params_n",
            "Histogram of the n request parameter.",
            replicas,
            Tokens::paramsN));
    all.metricSnapshot(
        tokens(
            "vllm:request_params_max_tokens",
            "Histogram of the max_tokens request parameter.",
            replicas,
            Tokens::paramsMaxTokens));
    kvTransfer(all, replicas);
  }

  /**
   * Disaggregated prefill/decode's channel: KV bytes each replica pulled and served ({@code
   * direction}), and how long its completed pulls took; replicas whose runner cannot move KV blocks
   * are left out. Bytes over seconds of the same replicas is the transfer rate.
   */
  private static void kvTransfer(MetricSnapshots.Builder all, List<Replica> replicas) {
    CounterSnapshot.Builder bytes =
        CounterSnapshot.builder()
            .name("troupe:kv_transfer_bytes")
            .help("KV bytes moved between replicas for disaggregated prefill/decode.");
    HistogramSnapshot.Builder seconds =
        HistogramSnapshot.builder()
            .name("troupe:kv_transfer_pull_seconds")
            .help("Seconds a completed KV pull took, from asking to having every block.");
    for (Replica r : replicas) {
      WorkerStatus.Details d = r.status().details();
      WorkerStatus.KvTransferStats kv = d == null ? null : d.kvTransfer();
      if (kv == null) continue;
      Labels l = labels(r);
      bytes.dataPoint(
          CounterDataPointSnapshot.builder()
              .labels(l.add("direction", "pulled"))
              .value(kv.pulledBytes())
              .build());
      bytes.dataPoint(
          CounterDataPointSnapshot.builder()
              .labels(l.add("direction", "served"))
              .value(kv.servedBytes())
              .build());
      seconds.dataPoint(point(r, kv.pullSeconds()));
    }
    all.metricSnapshot(bytes.build());
    all.metricSnapshot(seconds.build());
  }

  /**
   * {@code vllm:iteration_tokens_total}, written by hand: a histogram whose name ends in {@code
   * _total} is vLLM's name, but the Prometheus client library refuses it (a counter's suffix).
   */
  static String iterationTokens(List<Replica> replicas) {
    StringBuilder b = new StringBuilder();
    String name = "vllm:iteration_tokens_total";
    b.append("# HELP ").append(name).append(" Histogram of number of tokens per engine_step.\n");
    b.append("# TYPE ").append(name).append(" histogram\n");
    for (Replica r : replicas) {
      Latencies l = r.status().latencies();
      if (l == null || l.tokens() == null) continue;
      Histogram h = l.tokens().iterationTokens();
      String labels = text(labels(r));
      long cumulative = 0;
      for (int i = 0; i <= h.bounds().length; i++) {
        cumulative += h.counts()[i];
        String le = i < h.bounds().length ? number(h.bounds()[i]) : "+Inf";
        b.append(name)
            .append("_bucket{")
            .append(labels)
            .append(",le=\"")
            .append(le)
            .append("\"} ")
            .append(cumulative)
            .append('\n');
      }
      b.append(name).append("_count{").append(labels).append("} ").append(cumulative).append('\n');
      b.append(name)
          .append("_sum{")
          .append(labels)
          .append("} ")
          .append(number(h.sum()))
          .append('\n');
    }
    return b.toString();
  }

  private static String text(Labels labels) {
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < labels.size(); i++) {
      if (i > 0) b.append(',');
      b.append(labels.getName(i)).append("=\"").append(escape(labels.getValue(i))).append('"');
    }
    return b.toString();
  }

  private static String escape(String v) {
    return v.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n");
  }

  private static String number(double v) {
    return v == Math.rint(v) && Math.abs(v) < 1e15
        ? String.format(Locale.ROOT, "%.1f", v)
        : Double.toString(v);
  }

  private static void latency(
      MetricSnapshots.Builder all,
      String name,
      String phase,
      List<Replica> replicas,
      Function<Latencies, Histogram> which) {
    all.metricSnapshot(
        histogram(
            name, "Histogram of time spent in " + phase + " phase for request.", replicas, which));
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

  /** An engine-clock latency histogram; replicas without latencies are left out. */
  private static HistogramSnapshot histogram(
      String name, String help, List<Replica> replicas, Function<Latencies, Histogram> which) {
    HistogramSnapshot.Builder b = HistogramSnapshot.builder().name(name).help(help);
    for (Replica r : replicas) {
      Latencies l = r.status().latencies();
      if (l != null) b.dataPoint(point(r, which.apply(l)));
    }
    return b.build();
  }

  /** A token histogram; replicas that do not report them are left out. */
  private static HistogramSnapshot tokens(
      String name, String help, List<Replica> replicas, Function<Tokens, Histogram> which) {
    HistogramSnapshot.Builder b = HistogramSnapshot.builder().name(name).help(help);
    for (Replica r : replicas) {
      Latencies l = r.status().latencies();
      if (l != null && l.tokens() != null) b.dataPoint(point(r, which.apply(l.tokens())));
    }
    return b.build();
  }

  private static HistogramDataPointSnapshot point(Replica r, Histogram h) {
    double[] bounds = Arrays.copyOf(h.bounds(), h.bounds().length + 1);
    bounds[bounds.length - 1] = Double.POSITIVE_INFINITY;
    return HistogramDataPointSnapshot.builder()
        .labels(labels(r))
        .classicHistogramBuckets(ClassicHistogramBuckets.of(bounds, h.counts()))
        .sum(h.sum())
        .build();
  }
}
