package dev.troupe.gateway.metrics;

import dev.troupe.protocol.cluster.ModelWorkerProtocol.ChoiceUpdate;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationEvent;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationUpdate;
import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.Histogram;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;
import org.apache.pekko.NotUsed;
import org.apache.pekko.stream.javadsl.Source;

/**
 * The metrics a gateway measures itself, with vLLM's names: finished requests by reason and the
 * latency histograms (vLLM's bucket bounds), labelled {@code model_name} (the served base model).
 * The scheduler's own gauges and token counters come from the workers ({@link MetricsRoute}).
 *
 * <p>Latencies run from when the gateway sends the request to the worker, so they include the
 * cluster hop but not the HTTP parsing before it. Thread-safe; one instance per gateway, shared by
 * the chat route (which records) and {@code GET /metrics} (which reads).
 */
public final class ServingMetrics {
  // vllm/v1/metrics/loggers.py bucket bounds, so dashboards built for vLLM read the same.
  private static final double[] TTFT_BOUNDS = {
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
    20.0, 40.0, 80.0, 160.0, 640.0, 2560.0
  };
  private static final double[] E2E_BOUNDS = {
    0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0,
    480.0, 960.0, 1920.0, 7680.0
  };

  private final PrometheusRegistry registry = new PrometheusRegistry();
  private final Counter success =
      Counter.builder()
          .name("vllm:request_success_total")
          .help("Count of successfully processed requests.")
          .labelNames("model_name", "finished_reason")
          .withoutExemplars()
          .register(registry);
  private final Histogram ttft =
      Histogram.builder()
          .name("vllm:time_to_first_token_seconds")
          .help("Histogram of time to first token in seconds.")
          .labelNames("model_name")
          .classicOnly()
          .classicUpperBounds(TTFT_BOUNDS)
          .withoutExemplars()
          .register(registry);
  private final Histogram e2e =
      Histogram.builder()
          .name("vllm:e2e_request_latency_seconds")
          .help("Histogram of e2e request latency in seconds.")
          .labelNames("model_name")
          .classicOnly()
          .classicUpperBounds(E2E_BOUNDS)
          .withoutExemplars()
          .register(registry);

  private final Counter routed =
      Counter.builder()
          .name("troupe:routing_decisions_total")
          .help("Requests routed to a model replica, by the reason the replica was chosen.")
          .labelNames("model_name", "engine", "reason")
          .withoutExemplars()
          .register(registry);

  /**
   * Counts a routing decision: {@code model}'s replica {@code replica}, chosen for {@code reason}.
   */
  public void routed(String model, int replica, String reason) {
    routed.labelValues(model, Integer.toString(replica), reason).inc();
  }

  /**
   * {@code events} of one generation of {@code model}, recorded as they pass: the first generated
   * token (TTFT), each finished choice ({@code request_success_total}; with {@code n > 1} every
   * choice counts, as vLLM v1 runs each as its own request) and completion (e2e latency). The clock
   * starts when the stream is materialized, i.e. when the request is sent.
   */
  public Source<GenerationEvent, NotUsed> observe(
      String model, Source<GenerationEvent, NotUsed> events) {
    return Source.fromMaterializer(
            (mat, attributes) -> {
              long start = System.nanoTime();
              boolean[] sawToken = {false};
              return events.map(
                  event -> {
                    record(model, event, start, sawToken);
                    return event;
                  });
            })
        .mapMaterializedValue(ignored -> NotUsed.getInstance());
  }

  private void record(String model, GenerationEvent event, long start, boolean[] sawToken) {
    if (!(event instanceof GenerationUpdate u)) return;
    for (ChoiceUpdate c : u.choices()) {
      if (!sawToken[0] && !c.tokenIds().isEmpty()) {
        sawToken[0] = true;
        ttft.labelValues(model).observe(seconds(start));
      }
      if (c.finished()) success.labelValues(model, c.finishReason().wireName()).inc();
    }
    if (u.done()) e2e.labelValues(model).observe(seconds(start));
  }

  private static double seconds(long startNanos) {
    return (System.nanoTime() - startNanos) / 1e9;
  }

  /** The current values of the gateway-side metrics. */
  public MetricSnapshots scrape() {
    return registry.scrape();
  }
}
