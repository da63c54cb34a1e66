package dev.troupe.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * vLLM's toy proxy ({@code tests/v1/kv_connector/nixl_integration/toy_proxy_server.py}) against two
 * Troupe nodes over HTTP, unchanged: the prefill request (the original with {@code
 * kv_transfer_params.do_remote_decode}, {@code max_tokens: 1}, {@code stream: false}, no {@code
 * min_tokens}) to one node; its response's {@code kv_transfer_params} copied onto the original
 * request, streamed from the other node. The streamed tokens are the ones one node computes alone.
 */
class DisaggregatedProxyFlowTest {
  private static final Duration WAIT = Duration.ofSeconds(90);
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Config TEST =
      ConfigFactory.parseString(
          """
          troupe.worker.engine.num-blocks = 64
          pekko.cluster.gossip-interval = 300ms
          pekko.cluster.leader-actions-interval = 300ms
          """);

  // a test with a config of its own replaces it before starting nodes; closed after each test
  private LoopbackNodes nodes = new LoopbackNodes(TEST, "sk-pd");
  private final HttpClient http = HttpClient.newHttpClient();

  @AfterEach
  void stopAll() {
    nodes.close();
  }

  /** A gateway and worker node with two replicas of the demo model. */
  private TroupeNode start(Path dir, String seed) throws Exception {
    return nodes.start(dir, "gateway,worker", seed, "--replicas", "demo=2");
  }

  private HttpResponse<String> post(TroupeNode node, Object body) throws Exception {
    return http.send(
        HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + node.httpPort() + "/v1/chat/completions"))
            .header("Content-Type", "application/json")
            .header("Authorization", "Bearer sk-pd")
            .POST(HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(body)))
            .timeout(WAIT)
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private static Map<String, Object> original(String question) {
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("model", "demo");
    body.put(
        "messages",
        List.of(
            Map.of("role", "system", "content", "You are a terse assistant. ".repeat(8)),
            Map.of("role", "user", "content", question)));
    body.put("max_tokens", 10);
    body.put("temperature", 0);
    body.put("return_token_ids", true);
    return body;
  }

  /** Token ids of a streamed answer's first choice. */
  private static List<Integer> streamedIds(String sse) throws Exception {
    List<Integer> ids = new ArrayList<>();
    for (String line : sse.split("\n")) {
      if (!line.startsWith("data: ") || line.equals("data: [DONE]")) continue;
      JsonNode chunk = JSON.readTree(line.substring(6));
      assertFalse(chunk.has("error"), line);
      assertFalse(chunk.has("kv_transfer_params"), "chunks never carry it: " + line);
      for (JsonNode choice : chunk.path("choices"))
        for (JsonNode id : choice.path("token_ids")) ids.add(id.asInt());
    }
    return ids;
  }

  @Test
  void theToyProxyFlowAgainstTwoNodes(@TempDir Path dir) throws Exception {
    TroupeNode a = start(dir.resolve("a"), null);
    TroupeNode b = start(dir.resolve("b"), "127.0.0.1:" + a.address().getPort().get());
    TestProbe<Object> wait = ActorTestKit.create(a.system()).createTestProbe();
    wait.awaitAssert(
        WAIT,
        () -> {
          long up = 0;
          for (var m : Cluster.get(a.system()).state().getMembers())
            if (m.status() == MemberStatus.up()) up++;
          assertEquals(2, up);
          return null;
        });

    for (String question : List.of("Why is the sky blue?", "Name three prime numbers.")) {
      // one node alone, streamed: the tokens to match
      Map<String, Object> alone = original(question);
      alone.put("stream", true);
      HttpResponse<String> reference = post(b, alone);
      assertEquals(200, reference.statusCode(), reference.body());
      List<Integer> expected = streamedIds(reference.body());
      assertEquals(10, expected.size(), reference.body());

      // 1. the proxy's prefill request, to node a
      Map<String, Object> prefill = original(question);
      Map<String, Object> asked = new LinkedHashMap<>();
      asked.put("do_remote_decode", true);
      asked.put("do_remote_prefill", false);
      for (String k : List.of("remote_engine_id", "remote_block_ids", "remote_host", "remote_port"))
        asked.put(k, null);
      prefill.put("kv_transfer_params", asked);
      prefill.put("stream", false);
      prefill.put("max_tokens", 1);
      HttpResponse<String> p = post(a, prefill);
      assertEquals(200, p.statusCode(), p.body());
      JsonNode params = JSON.readTree(p.body()).path("kv_transfer_params");
      assertTrue(params.isObject(), p.body());
      assertTrue(params.path("do_remote_prefill").asBoolean(), params.toString());
      assertFalse(params.path("do_remote_decode").asBoolean(), params.toString());
      assertTrue(params.path("remote_block_ids").size() > 0, params.toString());
      assertTrue(params.path("remote_port").asInt() > 0, params.toString());
      assertEquals(1, params.path("tp_size").asInt(), params.toString());

      // 2. the original request with those params, streamed from node b
      Map<String, Object> decode = original(question);
      decode.put("kv_transfer_params", JSON.convertValue((ObjectNode) params, Map.class));
      decode.put("stream", true);
      HttpResponse<String> d = post(b, decode);
      assertEquals(200, d.statusCode(), d.body());
      assertEquals(expected, streamedIds(d.body()), "P/D streams what one node does");

      // the lease was pulled: the same params again are refused with the reason
      Map<String, Object> again = original(question);
      again.put("kv_transfer_params", JSON.convertValue((ObjectNode) params, Map.class));
      HttpResponse<String> refused = post(a, again);
      assertEquals(400, refused.statusCode(), refused.body());
      JsonNode error = JSON.readTree(refused.body()).path("error");
      assertEquals("kv_transfer_params", error.path("param").asText(), refused.body());
      assertTrue(
          error.path("message").asText().contains("no KV blocks are leased"), refused.body());
    }
  }

  /**
   * The prefill node dies after answering, before the decode side pulls: with {@code fail} the
   * decode request fails with the reason; with {@code recompute} it computes the prompt itself and
   * answers what one node computes alone.
   */
  @org.junit.jupiter.params.ParameterizedTest
  @org.junit.jupiter.params.provider.ValueSource(strings = {"fail", "recompute"})
  void aPrefillNodeGoneBeforeThePull(String policy, @TempDir Path dir) throws Exception {
    nodes =
        new LoopbackNodes(
            ConfigFactory.parseString("troupe.kv-transfer.load-failure-policy = " + policy)
                .withFallback(TEST),
            "sk-pd");
    TroupeNode a = start(dir.resolve("a"), null);
    TroupeNode b = start(dir.resolve("b"), "127.0.0.1:" + a.address().getPort().get());
    TestProbe<Object> wait = ActorTestKit.create(a.system()).createTestProbe();
    wait.awaitAssert(
        WAIT,
        () -> {
          long up = 0;
          for (var m : Cluster.get(a.system()).state().getMembers())
            if (m.status() == MemberStatus.up()) up++;
          assertEquals(2, up);
          return null;
        });
    String question = "Why is the sky blue?";
    Map<String, Object> alone = original(question);
    HttpResponse<String> reference = post(a, alone);
    assertEquals(200, reference.statusCode(), reference.body());
    JsonNode expected = JSON.readTree(reference.body()).path("choices").path(0).path("token_ids");

    Map<String, Object> prefill = original(question);
    prefill.put("kv_transfer_params", Map.of("do_remote_decode", true));
    prefill.put("max_tokens", 1);
    HttpResponse<String> p = post(a, prefill);
    assertEquals(200, p.statusCode(), p.body());
    JsonNode params = JSON.readTree(p.body()).path("kv_transfer_params");
    assertTrue(params.isObject(), p.body());
    // whichever node's replica prefilled it (the gateway routes anywhere) is the one to lose
    int port = params.path("remote_port").asInt();
    TroupeNode prefiller = null;
    for (TroupeNode n : List.of(a, b))
      if (dev.troupe.worker.kv.KvTransferServer.get(n.system())
              .address()
              .toCompletableFuture()
              .get()
              .getPort()
          == port) prefiller = n;
    assertTrue(prefiller != null, "no node serves port " + port);
    TroupeNode survivor = prefiller == a ? b : a;
    nodes.stop(prefiller);
    // the survivor has taken the lost node's replicas over: the decode is not itself migrated
    TestProbe<Object> left = ActorTestKit.create(survivor.system()).createTestProbe();
    left.awaitAssert(
        WAIT,
        () -> {
          int members = 0;
          for (var m : Cluster.get(survivor.system()).state().getMembers()) members++;
          assertEquals(1, members);
          return null;
        });

    Map<String, Object> decode = original(question);
    decode.put("kv_transfer_params", JSON.convertValue((ObjectNode) params, Map.class));
    HttpResponse<String> d = post(survivor, decode);
    if (policy.equals("fail")) {
      assertEquals(503, d.statusCode(), d.body());
      JsonNode error = JSON.readTree(d.body()).path("error");
      assertTrue(
          error.path("message").asText().contains("could not load the prompt's KV blocks from"),
          d.body());
    } else {
      assertEquals(200, d.statusCode(), d.body());
      assertEquals(
          expected,
          JSON.readTree(d.body()).path("choices").path(0).path("token_ids"),
          "recomputed here: the tokens of one node");
    }
  }
}
