package dev.troupe.gateway.routes;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.gateway.http.ApiRoutes;
import dev.troupe.gateway.http.GatewayRouteTest;
import dev.troupe.gateway.http.GatewaySettings;
import dev.troupe.gateway.metrics.MetricsRoute;
import dev.troupe.gateway.metrics.ServingMetrics;
import dev.troupe.gateway.replicas.ModelCatalog;
import dev.troupe.gateway.replicas.ServedModel;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Command;
import java.time.Duration;
import java.util.List;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.testkit.TestRoute;
import org.apache.pekko.http.javadsl.testkit.TestRouteResult;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@code GET /metrics}: vLLM's metric names, fed by worker status and by finished chat requests.
 */
class MetricsRouteTest extends GatewayRouteTest {
  private ChatRouteFixture fixture;
  private TestRoute route;

  @BeforeAll
  void setUp() {
    fixture = new ChatRouteFixture(testKit);
    route = testRoute(fixture.route);
  }

  private String scrape(TestRoute on) {
    TestRouteResult r = on.run(bearer(HttpRequest.GET("/metrics"), ChatRouteFixture.KEY));
    r.assertStatusCode(200);
    return r.entityString();
  }

  /**
   * The value of the sample {@code series} (name and labels exactly as written), or NaN if absent.
   */
  static double value(String exposition, String series) {
    for (String line : exposition.split("\n"))
      if (line.startsWith(series + " "))
        return Double.parseDouble(line.substring(series.length() + 1).trim());
    return Double.NaN;
  }

  @Test
  void needsTheApiKeyAndUsesThePrometheusTextFormat() {
    // Unlike vLLM's, /metrics needs the key unless troupe.gateway.metrics-without-auth opens it
    // (HostileRequestsRouteTest).
    assertEquals(401, route.run(HttpRequest.GET("/metrics")).response().status().intValue());
    TestRouteResult r = route.run(bearer(HttpRequest.GET("/metrics"), ChatRouteFixture.KEY));
    r.assertStatusCode(200);
    assertTrue(
        r.response().entity().getContentType().toString().startsWith("text/plain; version=0.0.4"),
        r.response().entity().getContentType().toString());
    String body = r.entityString();
    for (String name :
        List.of(
            "vllm:num_requests_running",
            "vllm:num_requests_waiting",
            "vllm:num_preemptions_total",
            "vllm:prompt_tokens_total",
            "vllm:generation_tokens_total"))
      for (String model : List.of("fake", "prio"))
        assertFalse(
            Double.isNaN(
                value(
                    body,
                    name
                        + "{engine=\"0\",model_name=\""
                        + model
                        + "\",replica=\""
                        + model
                        + "#0\"}")),
            name + "\n" + body);
    assertTrue(body.contains("# TYPE vllm:num_requests_running gauge"), body);
    assertTrue(body.contains("# TYPE vllm:prompt_tokens_total counter"), body);
    assertTrue(body.contains("# TYPE vllm:e2e_request_latency_seconds histogram"), body);
    assertTrue(body.contains("# TYPE vllm:time_to_first_token_seconds histogram"), body);
  }

  @Test
  void aChatRequestMovesTheWorkerCountersAndTheGatewayMetrics() {
    String fake = "{engine=\"0\",model_name=\"fake\",replica=\"fake#0\"}";
    String before = scrape(route);
    TestRouteResult chat =
        route.run(
            bearer(
                postJson("/v1/chat/completions", ChatCompletionsRouteTest.body("\"n\":2")),
                ChatRouteFixture.KEY));
    chat.assertStatusCode(200);
    String after = scrape(route);

    // From the worker's status: prompt counted once, two tokens per choice.
    assertEquals(
        FakeWorker.PROMPT_IDS.size(),
        value(after, "vllm:prompt_tokens_total" + fake)
            - value(before, "vllm:prompt_tokens_total" + fake));
    assertEquals(
        4.0,
        value(after, "vllm:generation_tokens_total" + fake)
            - value(before, "vllm:generation_tokens_total" + fake));
    // From the gateway: both choices finished with stop; one request timed.
    String stop =
        "vllm:request_success_total{engine=\"0\",finished_reason=\"stop\",model_name=\"fake\",node=\"local\",replica=\"fake#0\"}";
    assertEquals(2.0, value(after, stop) - orZero(value(before, stop)), after);
    String e2e =
        "vllm:e2e_request_latency_seconds_count{engine=\"0\",model_name=\"fake\",node=\"local\",replica=\"fake#0\"}";
    assertEquals(1.0, value(after, e2e) - orZero(value(before, e2e)), after);
    String ttft =
        "vllm:time_to_first_token_seconds_count{engine=\"0\",model_name=\"fake\",node=\"local\",replica=\"fake#0\"}";
    assertEquals(1.0, value(after, ttft) - orZero(value(before, ttft)), after);
    String inf =
        "vllm:e2e_request_latency_seconds_bucket{engine=\"0\",model_name=\"fake\",node=\"local\",replica=\"fake#0\",le=\"+Inf\"}";
    assertEquals(value(after, e2e), value(after, inf), after);
    // The other model saw nothing.
    String prio = "{engine=\"0\",model_name=\"prio\",replica=\"prio#0\"}";
    assertEquals(
        value(before, "vllm:prompt_tokens_total" + prio),
        value(after, "vllm:prompt_tokens_total" + prio));
  }

  @Test
  void prefixCacheKvUsageAndEngineLatenciesComePerReplica() {
    String fake = "{engine=\"0\",model_name=\"fake\",replica=\"fake#0\"}";
    route
        .run(
            bearer(
                postJson("/v1/chat/completions", ChatCompletionsRouteTest.body("")),
                ChatRouteFixture.KEY))
        .assertStatusCode(200);
    String body = scrape(route);
    assertTrue(body.contains("# TYPE vllm:prefix_cache_queries_total counter"), body);
    assertTrue(body.contains("# TYPE vllm:prefix_cache_hits_total counter"), body);
    assertTrue(body.contains("# TYPE vllm:kv_cache_usage_perc gauge"), body);
    assertEquals(4.0 / 16, value(body, "vllm:kv_cache_usage_perc" + fake), body);
    double queries = value(body, "vllm:prefix_cache_queries_total" + fake);
    assertTrue(queries >= FakeWorker.PROMPT_IDS.size(), body);
    assertEquals(Math.floor(queries / 3), value(body, "vllm:prefix_cache_hits_total" + fake));
    for (String h :
        List.of(
            "vllm:request_queue_time_seconds",
            "vllm:request_prefill_time_seconds",
            "vllm:request_decode_time_seconds",
            "vllm:request_inference_time_seconds",
            "vllm:inter_token_latency_seconds")) {
      assertTrue(body.contains("# TYPE " + h + " histogram"), h + "\n" + body);
      double count = value(body, h + "_count" + fake);
      assertTrue(count >= 1, h + "\n" + body);
      assertEquals(
          count,
          value(
              body, h + "_bucket{engine=\"0\",model_name=\"fake\",replica=\"fake#0\",le=\"+Inf\"}"),
          "buckets are cumulative in the text format: +Inf holds them all\n" + body);
      assertEquals(
          count,
          value(
              body, h + "_bucket{engine=\"0\",model_name=\"fake\",replica=\"fake#0\",le=\"0.5\"}"),
          body);
      assertEquals(
          0.0,
          value(
              body, h + "_bucket{engine=\"0\",model_name=\"fake\",replica=\"fake#0\",le=\"0.05\"}"),
          body);
      assertEquals(0.1 * count, value(body, h + "_sum" + fake), 1e-9);
    }
  }

  @Test
  void aStreamedRequestIsRecordedToo() {
    String stop =
        "vllm:request_success_total{engine=\"0\",finished_reason=\"stop\",model_name=\"fake\",node=\"local\",replica=\"fake#0\"}";
    String before = scrape(route);
    TestRouteResult chat =
        route.run(
            bearer(
                postJson("/v1/chat/completions", ChatCompletionsRouteTest.body("\"stream\":true")),
                ChatRouteFixture.KEY));
    chat.assertStatusCode(200);
    assertTrue(chat.entityString().endsWith("data: [DONE]\n\n"));
    assertEquals(1.0, value(scrape(route), stop) - orZero(value(before, stop)));
  }

  @Test
  void aReplicaThatDoesNotAnswerIsLeftOutNotAnError() {
    ActorRef<Command> silent = testKit.spawn(Behaviors.ignore());
    ActorRef<Command> fake =
        testKit.spawn(FakeWorker.create("fcfs", testKit.<Object>createTestProbe().ref()));
    ModelCatalog models =
        ModelCatalog.inTurn(
            testKit.system(),
            List.of(ServedModel.of("fake", 2, "/models/fake")),
            id -> id.equals("fake#1") ? silent : fake,
            Duration.ofSeconds(3));
    TestRoute two =
        testRoute(
            ApiRoutes.builder(GatewaySettings.of(0, List.of()))
                .add(new MetricsRoute(models, new ServingMetrics(), Duration.ofMillis(200)))
                .build());
    String body = scrape(two);
    assertEquals(
        0.0,
        value(
            body, "vllm:num_requests_waiting{engine=\"0\",model_name=\"fake\",replica=\"fake#0\"}"),
        body);
    assertTrue(
        Double.isNaN(
            value(
                body,
                "vllm:num_requests_waiting{engine=\"1\",model_name=\"fake\",replica=\"fake#1\"}")),
        body);
  }

  private static double orZero(double v) {
    return Double.isNaN(v) ? 0 : v;
  }
}
