package dev.troupe.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;

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
import java.util.List;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Role-aware replica placement ({@code KvRolePlacement}) across four nodes: a gateway-only node, a
 * worker node declaring {@code --kv-role demo=prefill}, one declaring nothing ({@code both}), and,
 * joining last, one declaring {@code decode}; the model has two replicas. Pekko's default placement
 * (fewest shards) would leave them on the first two worker nodes (one each: nothing to rebalance
 * when the third joins); placed by role, the replica on the {@code both} node moves to the {@code
 * decode} node, which asked for one.
 */
class KvRolePlacementMultiNodeTest {
  private static final Duration WAIT = Duration.ofSeconds(120);
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Config TEST =
      ConfigFactory.parseString(
          """
          troupe.worker.engine.num-blocks = 64
          pekko.cluster.gossip-interval = 300ms
          pekko.cluster.leader-actions-interval = 300ms
          pekko.cluster.sharding.rebalance-interval = 2s
          """);

  private final LoopbackNodes nodes = new LoopbackNodes(TEST, "sk-place");
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

  /** The roles of the nodes holding the ready replicas, sorted ({@code kv_role}). */
  private List<String> placedRoles(TroupeNode gateway) throws Exception {
    HttpResponse<String> r =
        http.send(
            HttpRequest.newBuilder(
                    URI.create("http://127.0.0.1:" + gateway.httpPort() + "/v1/cluster"))
                .header("Authorization", "Bearer sk-place")
                .timeout(WAIT)
                .build(),
            HttpResponse.BodyHandlers.ofString());
    List<String> roles = new ArrayList<>();
    for (JsonNode replica : JSON.readTree(r.body()).path("replicas"))
      if (replica.path("state").asText().equals("ready"))
        roles.add(replica.path("kv_role").asText());
    roles.sort(null);
    return roles;
  }

  @Test
  void aReplicaMovesToTheNodeThatDeclaredARoleNoReplicaHolds(@TempDir Path dir) throws Exception {
    TroupeNode gateway = start(dir.resolve("g"), "gateway", null, null);
    String seed = "127.0.0.1:" + gateway.address().getPort().get();
    start(dir.resolve("p"), "worker,trainer", seed, "prefill");
    start(dir.resolve("b"), "worker", seed, null);
    TestProbe<Object> wait = ActorTestKit.create(gateway.system()).createTestProbe();
    wait.awaitAssert(
        WAIT,
        Duration.ofMillis(500),
        () -> {
          assertEquals(List.of("both", "prefill"), placedRoles(gateway));
          return null;
        });
    start(dir.resolve("d"), "worker", seed, "decode");
    wait.awaitAssert(
        WAIT,
        Duration.ofMillis(500),
        () -> {
          assertEquals(
              List.of("decode", "prefill"),
              placedRoles(gateway),
              "the decode node asked for a replica: the both node's moved there");
          return null;
        });
  }
}
