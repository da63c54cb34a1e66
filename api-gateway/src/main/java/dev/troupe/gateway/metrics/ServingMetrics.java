package dev.troupe.gateway.metrics;

import dev.troupe.gateway.replicas.ReplicaSelector;
import dev.troupe.protocol.cluster.ClusterViewProtocol;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.ChoiceUpdate;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationEvent;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationUpdate;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Started;
import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.Histogram;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;
import org.apache.pekko.NotUsed;
import org.apache.pekko.actor.Address;
import org.apache.pekko.stream.javadsl.Source;

/**
 * The metrics a gateway measures itself, with vLLM's names: finished requests by reason and the
 * latency histograms (vLLM's bucket bounds), labelled {@code model_name} (the served base model),
 * {@code engine}, {@code replica} and {@code node} of the replica that served it (the last one, for
 * a request that moved); and the requests that moved to another replica ({@code
 * troupe:request_migrations_total}). The scheduler's own gauges and token counters come from the
 * workers ({@link MetricsRoute}).
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
          .labelNames("model_name", "engine", "replica", "node", "finished_reason")
          .withoutExemplars()
          .register(registry);
  private final Histogram ttft =
      Histogram.builder()
          .name("vllm:time_to_first_token_seconds")
          .help("Histogram of time to first token in seconds.")
          .labelNames("model_name", "engine", "replica", "node")
          .classicOnly()
          .classicUpperBounds(TTFT_BOUNDS)
          .withoutExemplars()
          .register(registry);
  private final Histogram e2e =
      Histogram.builder()
          .name("vllm:e2e_request_latency_seconds")
          .help("Histogram of e2e request latency in seconds.")
          .labelNames("model_name", "engine", "replica", "node")
          .classicOnly()
          .classicUpperBounds(E2E_BOUNDS)
          .withoutExemplars()
          .register(registry);
  private final Counter migrations =
      Counter.builder()
          .name("troupe:request_migrations_total")
          .help(
              "Requests that moved to another replica of their model after their worker was"
                  + " lost, once per move.")
          .labelNames("model_name")
          .withoutExemplars()
          .register(registry);

  /** How this gateway's own node is named (a local worker's address has no host and port). */
  private final String localNode;

  /** Without a cluster address: local workers' series say {@code node="local"}. */
  public ServingMetrics() {
    this("local");
  }

  /**
   * @param localNode this node's cluster address, {@code host:port}, for workers on this node
   */
  public ServingMetrics(String localNode) {
    this.localNode = localNode;
  }

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

  private final Counter disaggregation =
      Counter.builder()
          .name("troupe:disaggregation_decisions_total")
          .help(
              "Requests of models with prefill/decode roles: split into prefill and decode legs"
                  + " (decision=disaggregated) or served whole, and why.")
          .labelNames("model_name", "decision")
          .withoutExemplars()
          .register(registry);
  private final Histogram prefillLeg =
      Histogram.builder()
          .name("troupe:prefill_leg_seconds")
          .help(
              "Histogram of prefill-leg latency of disaggregated requests in seconds, from sending"
                  + " the leg to its KV handle (outcome=ok) or its failure.")
          .labelNames("model_name", "outcome")
          .classicOnly()
          .classicUpperBounds(TTFT_BOUNDS)
          .withoutExemplars()
          .register(registry);
  private final Counter servedWhole =
      Counter.builder()
          .name("troupe:disaggregation_fallbacks_total")
          .help(
              "Requests split into prefill and decode legs that were served whole after all: the"
                  + " prefill leg failed, or the decode replica could not pull its KV blocks.")
          .labelNames("model_name")
          .withoutExemplars()
          .register(registry);

  /** Counts a prefill/decode decision ({@code RouteDecision.PD_*}) of {@code model}. */
  public void disaggregation(String model, String decision) {
    disaggregation.labelValues(model, decision).inc();
    servedWhole.labelValues(model); // the series exists (at 0) once the model has roles
  }

  /** A prefill leg of {@code model} ended after {@code nanos}: with its KV handle, or failed. */
  public void prefillLeg(String model, boolean ok, long nanos) {
    prefillLeg.labelValues(model, ok ? "ok" : "failed").observe(nanos / 1e9);
  }

  /** A split request of {@code model} was served whole after all. */
  public void servedWholeAfterSplit(String model) {
    servedWhole.labelValues(model).inc();
  }

  /** What the replica selector tells these metrics: routing and prefill/decode decisions. */
  public ReplicaSelector.Recorder recorder() {
    return new ReplicaSelector.Recorder() {
      @Override
      public void routed(String model, int replica, String reason) {
        ServingMetrics.this.routed(model, replica, reason);
      }

      @Override
      public void disaggregation(String model, String decision) {
        ServingMetrics.this.disaggregation(model, decision);
      }
    };
  }

  /**
   * {@code events} of one generation of {@code model}, recorded as they pass: the first generated
   * token (TTFT), each finished choice ({@code request_success_total}; with {@code n > 1} every
   * choice counts, as vLLM v1 runs each as its own request) and completion (e2e latency). The clock
   * starts when the stream is materialized, i.e. when the request is sent.
   */
  public Source<GenerationEvent, NotUsed> observe(
      String model, Source<GenerationEvent, NotUsed> events) {
    migrations.labelValues(model); // the series exists (at 0) once the model has served
    return Source.fromMaterializer(
            (mat, attributes) -> {
              Observed seen = new Observed(model, System.nanoTime());
              return events.map(
                  event -> {
                    record(seen, event);
                    return event;
                  });
            })
        .mapMaterializedValue(ignored -> NotUsed.getInstance());
  }

  /** One generation's progress: its clock, whether it has a token, who serves it now. */
  private static final class Observed {
    final String model;
    final long start;
    boolean sawToken;
    String[] replica; // engine, replica, node; null until the first update names it

    Observed(String model, long start) {
      this.model = model;
      this.start = start;
    }

    String[] labels(String... more) {
      String[] r = replica == null ? new String[] {"", "", ""} : replica;
      String[] out = new String[1 + r.length + more.length];
      out[0] = model;
      System.arraycopy(r, 0, out, 1, r.length);
      System.arraycopy(more, 0, out, 1 + r.length, more.length);
      return out;
    }
  }

  private void record(Observed seen, GenerationEvent event) {
    if (!(event instanceof GenerationUpdate u)) return;
    if (u.started() != null) {
      // Each later start is the request resumed elsewhere after its worker was lost.
      if (seen.replica != null) migrations.labelValues(seen.model).inc();
      seen.replica = replicaLabels(u.started());
    }
    for (ChoiceUpdate c : u.choices()) {
      if (!seen.sawToken && !c.tokenIds().isEmpty()) {
        seen.sawToken = true;
        ttft.labelValues(seen.labels()).observe(seconds(seen.start));
      }
      if (c.finished()) success.labelValues(seen.labels(c.finishReason().wireName())).inc();
    }
    if (u.done()) e2e.labelValues(seen.labels()).observe(seconds(seen.start));
  }

  /** The serving replica's {@code engine}, {@code replica} and {@code node} label values. */
  private String[] replicaLabels(Started s) {
    String id = s.servedBy();
    int hash = id.lastIndexOf('#');
    String engine = hash < 0 ? "" : id.substring(hash + 1);
    Address a = s.worker() == null ? null : s.worker().path().address();
    String node = a == null || a.getHost().isEmpty() ? localNode : ClusterViewProtocol.nodeName(a);
    return new String[] {engine, id, node};
  }

  private static double seconds(long startNanos) {
    return (System.nanoTime() - startNanos) / 1e9;
  }

  /** The current values of the gateway-side metrics. */
  public MetricSnapshots scrape() {
    return registry.scrape();
  }
}
