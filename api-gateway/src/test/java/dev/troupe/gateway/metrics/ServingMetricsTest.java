package dev.troupe.gateway.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.troupe.protocol.cluster.ModelWorkerProtocol.ChoiceUpdate;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.FinishReason;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationEvent;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationUpdate;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Started;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Usage;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * The gateway's own families name the replica that served: a request that started on {@code demo#1}
 * and, its worker lost, resumed on {@code demo#0} counts one migration, and its finish and
 * latencies under {@code demo#0}.
 */
class ServingMetricsTest {
  static final ActorTestKit testKit = ActorTestKit.create();

  @AfterAll
  static void stop() {
    testKit.shutdownTestKit();
  }

  static GenerationUpdate started(String replica) {
    return new GenerationUpdate("r", new Started(replica, null, 0, 3, null, null), List.of(), null);
  }

  @Test
  void aMovedRequestCountsAMigrationAndFinishesUnderItsLastReplica() throws Exception {
    ServingMetrics metrics = new ServingMetrics("10.0.0.1:2551");
    List<GenerationEvent> events =
        List.of(
            started("demo#1"),
            new GenerationUpdate(
                "r", null, List.of(new ChoiceUpdate(0, "a", List.of(7), null, null, null)), null),
            started("demo#0"),
            new GenerationUpdate(
                "r",
                null,
                List.of(new ChoiceUpdate(0, "b", List.of(8), null, FinishReason.LENGTH, null)),
                new Usage(3, 2, 0)));
    metrics
        .observe("demo", Source.from(events))
        .runWith(Sink.ignore(), testKit.system())
        .toCompletableFuture()
        .get(10, TimeUnit.SECONDS);

    ByteArrayOutputStream out = new ByteArrayOutputStream();
    new PrometheusTextFormatWriter(false).write(out, metrics.scrape());
    String text = out.toString(StandardCharsets.UTF_8);
    assertEquals(1.0, value(text, "troupe:request_migrations_total{model_name=\"demo\"}"), text);
    String last = "engine=\"0\",model_name=\"demo\",node=\"10.0.0.1:2551\",replica=\"demo#0\"";
    assertEquals(
        1.0,
        value(
            text,
            "vllm:request_success_total{engine=\"0\",finished_reason=\"length\","
                + "model_name=\"demo\",node=\"10.0.0.1:2551\",replica=\"demo#0\"}"),
        text);
    assertEquals(1.0, value(text, "vllm:e2e_request_latency_seconds_count{" + last + "}"), text);
    // the first token came from demo#1, before the move
    assertEquals(
        1.0,
        value(
            text,
            "vllm:time_to_first_token_seconds_count{engine=\"1\",model_name=\"demo\","
                + "node=\"10.0.0.1:2551\",replica=\"demo#1\"}"),
        text);
  }

  static double value(String exposition, String series) {
    for (String line : exposition.split("\n"))
      if (line.startsWith(series + " "))
        return Double.parseDouble(line.substring(series.length() + 1).trim());
    return Double.NaN;
  }
}
