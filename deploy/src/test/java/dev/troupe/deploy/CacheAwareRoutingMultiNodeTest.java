package dev.troupe.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
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
 * Cache-aware routing across the cluster: a gateway-only node and two worker nodes serving two
 * replicas of the demo model. The replicas publish their prefix caches over pub-sub; the gateway
 * tokenizes each prompt, and a request whose prefix one replica holds goes to that replica and
 * finds its blocks cached ({@code X-Troupe-Route}, {@code cached_tokens}), while a request with
 * another salt does not count those blocks. The decisions and the hits show in {@code /metrics}.
 */
class CacheAwareRoutingMultiNodeTest {
  private static final Duration WAIT = Duration.ofSeconds(90);
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Config TEST =
      ConfigFactory.parseString(
          """
          troupe.worker.engine.num-blocks = 64
          troupe.worker.cache-report-interval = 50ms
          troupe.worker.cache-report-heartbeat = 500ms
          pekko.cluster.gossip-interval = 300ms
          pekko.cluster.leader-actions-interval = 300ms
          """);

  private final LoopbackNodes nodes = new LoopbackNodes(TEST, "sk-route");
  private final HttpClient http = HttpClient.newHttpClient();

  @AfterEach
  void stopAll() {
    nodes.close();
  }

  private TroupeNode start(Path dir, String roles, String seed) throws Exception {
    return nodes.start(dir, roles, seed, "--replicas", "demo=2");
  }

  /** A chat's answer: the route header, the cached prompt tokens it reported, its token ids. */
  private record Answer(String route, int cachedTokens, int promptTokens, List<Integer> tokenIds) {
    String replica() {
      return field("replica");
    }

    String reason() {
      return field("reason");
    }

    private String field(String name) {
      for (String part : route.split(";\\s*"))
        if (part.startsWith(name + "=")) return part.substring(name.length() + 1);
      return null;
    }
  }

  private Answer chat(TroupeNode gateway, String system, String user, String salt)
      throws Exception {
    return chat(gateway, system, user, salt, false);
  }

  /**
   * One greedy chat; streamed with {@code stream_options.include_usage} when {@code stream}, the
   * usage then read from the last chunk that has it.
   */
  private Answer chat(TroupeNode gateway, String system, String user, String salt, boolean stream)
      throws Exception {
    Map<String, Object> body = new HashMap<>();
    body.put("model", "demo");
    body.put(
        "messages",
        List.of(
            Map.of("role", "system", "content", system), Map.of("role", "user", "content", user)));
    body.put("max_tokens", 3);
    body.put("temperature", 0);
    body.put("return_token_ids", true);
    if (stream) {
      body.put("stream", true);
      body.put("stream_options", Map.of("include_usage", true));
    }
    if (salt != null) body.put("cache_salt", salt);
    HttpResponse<String> r =
        http.send(
            HttpRequest.newBuilder(
                    URI.create("http://127.0.0.1:" + gateway.httpPort() + "/v1/chat/completions"))
                .header("Content-Type", "application/json")
                .header("Authorization", "Bearer sk-route")
                .POST(HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(body)))
                .timeout(WAIT)
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertEquals(200, r.statusCode(), r.body());
    List<Integer> ids = new ArrayList<>();
    JsonNode usage = null;
    if (stream) {
      for (String line : r.body().split("\n")) {
        if (!line.startsWith("data: ") || line.equals("data: [DONE]")) continue;
        JsonNode chunk = JSON.readTree(line.substring(6));
        for (JsonNode choice : chunk.path("choices"))
          for (JsonNode id : choice.path("token_ids")) ids.add(id.asInt());
        if (chunk.path("usage").isObject()) usage = chunk.path("usage");
      }
      assertTrue(usage != null, "no usage chunk: " + r.body());
    } else {
      JsonNode answer = JSON.readTree(r.body());
      for (JsonNode id : answer.path("choices").path(0).path("token_ids")) ids.add(id.asInt());
      usage = answer.path("usage");
    }
    return new Answer(
        r.headers().firstValue("X-Troupe-Route").orElseThrow(),
        usage.path("prompt_tokens_details").path("cached_tokens").asInt(0),
        usage.path("prompt_tokens").asInt(),
        ids);
  }

  private String metrics(TroupeNode gateway) throws Exception {
    return http.send(
            HttpRequest.newBuilder(
                    URI.create("http://127.0.0.1:" + gateway.httpPort() + "/metrics"))
                .header("Authorization", "Bearer sk-route")
                .timeout(WAIT)
                .build(),
            HttpResponse.BodyHandlers.ofString())
        .body();
  }

  private static String system(int k) {
    return ("Session " + k + ": you are a terse assistant for a reinforcement-learning cluster. ")
        .repeat(6);
  }

  @Test
  void aPrefixHeldByOneReplicaDrawsItsRequestsThere(@TempDir Path dir) throws Exception {
    TroupeNode gateway = start(dir.resolve("g"), "gateway", null);
    String seed = "127.0.0.1:" + gateway.address().getPort().get();
    start(dir.resolve("a"), "worker,trainer", seed);
    start(dir.resolve("b"), "worker", seed);
    TestProbe<Object> wait = ActorTestKit.create(gateway.system()).createTestProbe();
    wait.awaitAssert(
        WAIT,
        () -> {
          long up = 0;
          for (var m : Cluster.get(gateway.system()).state().getMembers())
            if (m.status() == MemberStatus.up()) up++;
          assertEquals(3, up);
          return null;
        });

    // Until both replicas' reports reach the gateway, a first request may land anywhere; each
    // attempt uses a fresh system prompt, so a miss routed elsewhere spoils nothing.
    Answer warm = null;
    String replica = null;
    int k = 0;
    for (; k < 20 && warm == null; k++) {
      Answer cold = chat(gateway, system(k), "First question?", null);
      assertEquals(0, cold.cachedTokens(), cold.route());
      Thread.sleep(600); // the holder's report (every 50 ms) crosses to the gateway
      Answer next = chat(gateway, system(k), "Second question, a different one?", null);
      if ("prefix".equals(next.reason()) && next.replica().equals(cold.replica())) {
        warm = next;
        replica = cold.replica();
      }
    }
    assertTrue(warm != null, "no request was ever routed to the replica holding its prefix");
    assertTrue(warm.cachedTokens() > 0, warm.toString());
    assertTrue(warm.route().contains("cached_tokens=" + warm.cachedTokens()), warm.route());
    // Affinity holds for the following requests of that prefix.
    String held = system(k - 1);
    // (Each after a pause: the replica's report that its last request ended and released its
    // blocks crosses to the gateway on its own path; until it arrives, those blocks count as load.)
    for (int i = 0; i < 3; i++) {
      Thread.sleep(200);
      Answer again = chat(gateway, held, "Question " + i + " again?", null);
      assertEquals(replica, again.replica(), again.route());
      assertEquals("prefix", again.reason(), again.route());
      assertTrue(again.cachedTokens() > 0, again.toString());
    }
    // Another tenant's salt: those blocks are not its prefix, here or at the replica.
    Answer salted = chat(gateway, held, "Second question, a different one?", "tenant-b");
    assertEquals(0, salted.cachedTokens(), salted.toString());
    assertTrue(salted.route().contains("cached_tokens=0"), salted.route());
    // The same prompt computed from scratch (other salt) and with its prefix cached: same tokens.
    assertEquals(3, salted.tokenIds().size(), salted.toString());
    assertEquals(salted.tokenIds(), warm.tokenIds());
    // Streamed, the usage chunk reports the hit too, and the tokens are the same.
    Thread.sleep(200);
    Answer streamed = chat(gateway, held, "Second question, a different one?", null, true);
    assertEquals(replica, streamed.replica(), streamed.route());
    assertTrue(streamed.cachedTokens() > 0, streamed.toString());
    assertEquals(warm.tokenIds(), streamed.tokenIds());

    String m = metrics(gateway);
    assertTrue(
        m.contains(
            "troupe:routing_decisions_total{engine=\""
                + replica
                + "\",model_name=\"demo\",reason=\"prefix\"}"),
        m);
    // the replica's series, labelled with its id and its node
    String hits = "vllm:prefix_cache_hits_total{engine=\"" + replica + "\",model_name=\"demo\",";
    String id = "replica=\"demo#" + replica + "\"}";
    boolean found = false;
    for (String line : m.split("\n"))
      if (line.startsWith(hits) && line.contains(",node=\"127.0.0.1:") && line.contains(id + " ")) {
        found = true;
        assertTrue(
            Double.parseDouble(line.substring(line.indexOf(id) + id.length() + 1)) > 0, line);
      }
    assertTrue(found, m);
  }
}
