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
import java.util.Set;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The gateway's built-in prefill/decode path across three nodes: a gateway-only node, a worker node
 * whose demo replicas prefill ({@code --kv-role demo=prefill}) and one whose replicas decode. A
 * long prompt is prefilled on the first, its KV pulled over the KV channel and decoded on the
 * second, with the tokens it gets served whole (greedy and seeded); {@code X-Troupe-Route} names
 * both replicas; a short prompt is served whole on the decode replica; {@code /v1/cluster} shows
 * the roles and {@code /metrics} the decisions.
 */
class DisaggregationMultiNodeTest {
  private static final Duration WAIT = Duration.ofSeconds(120);
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Config TEST =
      ConfigFactory.parseString(
          """
          troupe.worker.engine.num-blocks = 128
          troupe.worker.cache-report-interval = 50ms
          troupe.worker.cache-report-heartbeat = 500ms
          troupe.gateway.routing.disaggregation.non-cached-tokens = 48
          pekko.cluster.gossip-interval = 300ms
          pekko.cluster.leader-actions-interval = 300ms
          pekko.cluster.sharding.rebalance-interval = 2s
          """);

  private final LoopbackNodes nodes = new LoopbackNodes(TEST, "sk-pd");
  private final HttpClient http = HttpClient.newHttpClient();

  @AfterEach
  void stopAll() {
    nodes.close();
  }

  private TroupeNode start(Path dir, String roles, String seed, String kvRole) throws Exception {
    List<String> extra = new ArrayList<>(List.of("--replicas", "demo=2"));
    if (kvRole != null) extra.addAll(List.of("--kv-role", "demo=" + kvRole));
    return nodes.start(dir, roles, seed, extra.toArray(String[]::new));
  }

  private HttpResponse<String> get(TroupeNode gateway, String path) throws Exception {
    return http.send(
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + gateway.httpPort() + path))
            .header("Authorization", "Bearer sk-pd")
            .timeout(WAIT)
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  /** A chat's answer: its route header and token ids. */
  private record Answer(String route, List<Integer> tokenIds) {
    String field(String name) {
      for (String part : route.split(";\\s*"))
        if (part.startsWith(name + "=")) return part.substring(name.length() + 1);
      return null;
    }
  }

  /** One chat of {@code maxTokens}; greedy unless {@code seed} is given (then temperature 0.9). */
  private Answer chat(
      TroupeNode gateway, String user, Long seed, boolean stream, Map<String, Object> extra)
      throws Exception {
    Map<String, Object> body = new HashMap<>();
    body.put("model", "demo");
    body.put("messages", List.of(Map.of("role", "user", "content", user)));
    body.put("max_tokens", 6);
    body.put("temperature", seed == null ? 0 : 0.9);
    if (seed != null) body.put("seed", seed);
    body.put("return_token_ids", true);
    body.put("stream", stream);
    body.putAll(extra);
    HttpResponse<String> r =
        http.send(
            HttpRequest.newBuilder(
                    URI.create("http://127.0.0.1:" + gateway.httpPort() + "/v1/chat/completions"))
                .header("Content-Type", "application/json")
                .header("Authorization", "Bearer sk-pd")
                .POST(HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(body)))
                .timeout(WAIT)
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertEquals(200, r.statusCode(), r.body());
    List<Integer> ids = new ArrayList<>();
    if (stream) {
      for (String line : r.body().split("\n")) {
        if (!line.startsWith("data: ") || line.equals("data: [DONE]")) continue;
        for (JsonNode choice : JSON.readTree(line.substring(6)).path("choices"))
          for (JsonNode id : choice.path("token_ids")) ids.add(id.asInt());
      }
    } else {
      for (JsonNode id : JSON.readTree(r.body()).path("choices").path(0).path("token_ids"))
        ids.add(id.asInt());
    }
    return new Answer(r.headers().firstValue("X-Troupe-Route").orElseThrow(), ids);
  }

  /** A prompt of a few hundred tokens, different per {@code k} from its first words on. */
  private static String longPrompt(int k) {
    return ("Request " + k + ": summarise the state of the reinforcement-learning cluster. ")
        .repeat(20);
  }

  @Test
  void aLongPromptIsPrefilledOnOneNodeAndDecodedOnTheOther(@TempDir Path dir) throws Exception {
    TroupeNode gateway = start(dir.resolve("g"), "gateway", null, null);
    String seed = "127.0.0.1:" + gateway.address().getPort().get();
    start(dir.resolve("p"), "worker,trainer", seed, "prefill");
    start(dir.resolve("d"), "worker", seed, "decode");
    // Sharding places the two replicas (one per node once it has rebalanced); each reports its
    // node's role.
    Map<String, String> roles = new HashMap<>();
    TestProbe<Object> wait = ActorTestKit.create(gateway.system()).createTestProbe();
    wait.awaitAssert(
        WAIT,
        Duration.ofMillis(500),
        () -> {
          roles.clear();
          for (JsonNode r : JSON.readTree(get(gateway, "/v1/cluster").body()).path("replicas"))
            if (r.path("state").asText().equals("ready"))
              roles.put(r.path("kv_role").asText(), r.path("id").asText());
          assertEquals(2, roles.size(), "one prefill and one decode replica ready: " + roles);
          return null;
        });
    String p = roles.get("prefill");
    String d = roles.get("decode");
    String pIndex = p.substring(p.indexOf('#') + 1);

    // The gateway learns the roles from the replicas' reports (every 50 ms): until then a request
    // may be served whole — and its prompt is then cached on the replica that served it, so each
    // try has a salt of its own (a cached prompt is rightly not split again: below_threshold).
    int[] tries = {0};
    wait.awaitAssert(
        WAIT,
        Duration.ofMillis(300),
        () -> {
          Answer a =
              chat(gateway, longPrompt(0), null, false, Map.of("cache_salt", "try-" + tries[0]++));
          assertEquals("disaggregated", a.field("disaggregation"), a.route());
          return null;
        });

    for (int k = 1; k <= 2; k++) {
      boolean stream = k == 2;
      Answer split = chat(gateway, longPrompt(k), null, stream, Map.of());
      assertEquals("disaggregated", split.field("disaggregation"), split.route());
      assertEquals(pIndex, split.field("prefill_replica"), split.route());
      assertEquals(d, split.field("served_by"), split.route());
      assertEquals(p, split.field("prefilled_by"), split.route());
      // The same prompt served whole (prompt logprobs are never split; another salt, so nothing
      // of it is cached): the same tokens.
      Answer whole =
          chat(
              gateway,
              longPrompt(k),
              null,
              false,
              Map.of("prompt_logprobs", 0, "cache_salt", "whole-" + k));
      assertEquals("not_eligible", whole.field("disaggregation"), whole.route());
      assertEquals(d, whole.field("served_by"), whole.route());
      assertEquals(6, split.tokenIds().size(), split.toString());
      assertEquals(whole.tokenIds(), split.tokenIds(), "greedy, stream=" + stream);
    }

    // Seeded sampling: the same tokens split or whole.
    Answer seeded = chat(gateway, longPrompt(3), 1234L, false, Map.of());
    assertEquals("disaggregated", seeded.field("disaggregation"), seeded.route());
    Answer seededWhole =
        chat(
            gateway,
            longPrompt(3),
            1234L,
            false,
            Map.of("prompt_logprobs", 0, "cache_salt", "whole-seeded"));
    assertEquals(seededWhole.tokenIds(), seeded.tokenIds());

    // A short prompt is served whole, on the decode replica.
    Answer shortOne = chat(gateway, "Hi.", null, false, Map.of());
    assertEquals("below_threshold", shortOne.field("disaggregation"), shortOne.route());
    assertEquals(d, shortOne.field("served_by"), shortOne.route());
    assertEquals(null, shortOne.field("prefilled_by"), shortOne.route());

    String m = get(gateway, "/metrics").body();
    assertTrue(
        m.contains(
            "troupe:disaggregation_decisions_total{decision=\"disaggregated\",model_name=\"demo\"}"),
        m);
    assertTrue(
        m.contains("troupe:prefill_leg_seconds_count{model_name=\"demo\",outcome=\"ok\"}"), m);
    assertTrue(
        m.contains("troupe:disaggregation_fallbacks_total{model_name=\"demo\"} 0.0"),
        "no split request fell back to being served whole: " + m);
    // The KV channel's counters: every split pulled its blocks, so what the decode replica pulled
    // is what the prefill replica served, byte for byte (the exact block bytes of a pull:
    // ModelWorkerKvTransferTest), and each pull is timed.
    double pulled = total(m, "troupe:kv_transfer_bytes_total", "direction=\"pulled\"");
    assertTrue(pulled > 0, m);
    assertEquals(pulled, total(m, "troupe:kv_transfer_bytes_total", "direction=\"served\""), m);
    assertTrue(total(m, "troupe:kv_transfer_pull_seconds_count", "") >= 4, m); // 4 splits or more
    // The dashboard's P/D panels have their samples now.
    Set<String> sampled = ClusterMonitoringTest.sampled(m);
    assertTrue(sampled.containsAll(ClusterMonitoringTest.ONLY_WITH_KV_ROLES), m);
    for (String name : ClusterMonitoringTest.dashboardMetrics())
      if (name.startsWith("troupe:kv_transfer") || name.contains("disaggregation"))
        assertTrue(sampled.contains(name), name + " has samples: " + m);
  }

  /** The sum of {@code name}'s samples whose labels contain {@code label}. */
  private static double total(String exposition, String name, String label) {
    double sum = 0;
    for (String line : exposition.split("\n"))
      if (line.startsWith(name + "{") && line.contains(label))
        sum += Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
    return sum;
  }
}
