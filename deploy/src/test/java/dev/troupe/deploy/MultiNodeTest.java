package dev.troupe.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.troupe.protocol.Json;
import dev.troupe.protocol.cluster.ClusterViewProtocol;
import dev.troupe.protocol.cluster.GenerationRequest;
import dev.troupe.protocol.cluster.ModelWorkerProtocol;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Generate;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationEvent;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationUpdate;
import dev.troupe.protocol.cluster.SamplingParams;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.sharding.ShardRegion.CurrentShardRegionState;
import org.apache.pekko.cluster.sharding.typed.GetShardRegionState;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.typed.Cluster;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Three nodes of the real distribution in one JVM on loopback, as {@code deploy/local-cluster.sh}
 * starts them: a gateway-only node and two worker nodes. A request sent on the gateway node is
 * served by a worker on another node (over HTTP and through the sharding proxy); when the worker
 * node hosting the replica leaves, remember-entities restarts it on the remaining worker node, a
 * stream in flight there moves with it token for token (hand-off → Migrate → resume), and requests
 * are served again. Throughout, {@code GET /v1/cluster} on the gateway names the node hosting the
 * replica.
 */
class MultiNodeTest {
  private static final Duration WAIT = Duration.ofSeconds(90);
  private static final Config TEST =
      ConfigFactory.parseString(
          """
          troupe.worker.engine.num-blocks = 32
          # Faster hand-over than production defaults: restart remembered entities and retry
          # shard allocation sooner, spread gossip more often.
          pekko.cluster.sharding.entity-restart-backoff = 500ms
          pekko.cluster.sharding.retry-interval = 300ms
          pekko.cluster.sharding.rebalance-interval = 2s
          pekko.cluster.gossip-interval = 300ms
          pekko.cluster.leader-actions-interval = 300ms
          pekko.cluster.singleton.hand-over-retry-interval = 300ms
          """);

  private final LoopbackNodes nodes = new LoopbackNodes(TEST, "sk-multi");

  @AfterEach
  void stopAll() {
    nodes.close();
  }

  private TroupeNode start(Path dir, String roles, String seed) throws Exception {
    return nodes.start(dir, roles, seed);
  }

  private static GenerationRequest request(String id) {
    SamplingParams p =
        SamplingParams.builder().temperature(0.0).maxTokens(4).ignoreEos(true).build();
    return GenerationRequest.prompt(id, "Hello from the gateway", p);
  }

  /** Entity ids hosted by this node's ModelWorker region. */
  private static Set<String> hosted(TroupeNode node) {
    ActorTestKit kit = ActorTestKit.create(node.system());
    TestProbe<CurrentShardRegionState> probe = kit.createTestProbe();
    ClusterSharding.get(node.system())
        .shardState()
        .tell(new GetShardRegionState(ModelWorkerProtocol.TYPE_KEY, probe.ref()));
    Set<String> ids = new java.util.HashSet<>();
    probe.receiveMessage(WAIT).getShards().forEach(s -> ids.addAll(s.getEntityIds()));
    return ids;
  }

  private static void generateThrough(TroupeNode gateway, String id) {
    ActorTestKit kit = ActorTestKit.create(gateway.system());
    TestProbe<GenerationEvent> probe = kit.createTestProbe();
    ClusterSharding.get(gateway.system())
        .entityRefFor(ModelWorkerProtocol.TYPE_KEY, "demo#0")
        .tell(new Generate(request(id), probe.ref()));
    GenerationUpdate first = assertInstanceOf(GenerationUpdate.class, probe.receiveMessage(WAIT));
    assertEquals("demo#0", first.started().servedBy());
    assertNotNull(first.started().worker(), "the serving worker's address crossed the cluster");
    GenerationEvent last = first;
    while (!(last instanceof ModelWorkerProtocol.Failed) && !((GenerationUpdate) last).done())
      last = probe.receiveMessage(WAIT);
    GenerationUpdate done = assertInstanceOf(GenerationUpdate.class, last);
    assertEquals(4, done.usage().completionTokens());
  }

  @Test
  void requestsCrossNodesAndReplicasMoveWhenAWorkerNodeLeaves(@TempDir Path dir) throws Exception {
    TroupeNode gateway = start(dir.resolve("g"), "gateway", null);
    String seed = "127.0.0.1:" + gateway.address().getPort().get();
    TroupeNode workerA = start(dir.resolve("a"), "worker,trainer", seed);
    TroupeNode workerB = start(dir.resolve("b"), "worker", seed);
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

    // Over HTTP: the gateway node has no worker, so /tokenize must reach another node.
    HttpClient http = HttpClient.newHttpClient();
    HttpResponse<String> tokenized =
        http.send(
            HttpRequest.newBuilder(
                    URI.create("http://127.0.0.1:" + gateway.httpPort() + "/tokenize"))
                .header("Content-Type", "application/json")
                .header("Authorization", "Bearer sk-multi")
                .POST(
                    HttpRequest.BodyPublishers.ofString(
                        "{\"model\":\"demo\",\"prompt\":\"Hello world\"}"))
                .timeout(WAIT)
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertEquals(200, tokenized.statusCode(), tokenized.body());
    assertTrue(tokenized.body().contains("\"tokens\""), tokenized.body());

    // Through the gateway's sharding proxy: a generation served on a worker node.
    generateThrough(gateway, "r1");
    assertEquals(Set.of(), hosted(gateway), "a gateway-only node hosts no worker");
    TroupeNode host = hosted(workerA).contains("demo#0") ? workerA : workerB;
    TroupeNode other = host == workerA ? workerB : workerA;
    assertEquals(Set.of("demo#0"), hosted(host));
    // The cluster view says the same: three members, the replica ready on its host's node.
    JsonNode view = clusterView(gateway);
    assertEquals(3, view.get("members").size(), view.toString());
    assertEquals(nodeName(host), replica(view, "demo#0").get("node").asText(), view.toString());
    assertEquals("ready", replica(view, "demo#0").get("state").asText(), view.toString());
    for (JsonNode m : view.get("members"))
      assertEquals(
          m.get("node").asText().equals(nodeName(host)) ? 1 : 0,
          m.get("replicas").size(),
          view.toString());

    // A seeded stream in flight when the hosting node leaves: its shard is handed off, the worker
    // hands the request back (Migrate), and the gateway resumes it on the replica's new home.
    ChatClient client = new ChatClient(gateway.httpPort(), "sk-multi");
    List<Integer> expected = ChatClient.tokenIds(client.whole(64).get(2, TimeUnit.MINUTES));
    AtomicInteger seen = new AtomicInteger();
    var moving = client.stream(64, seen);
    wait.awaitAssert(
        WAIT,
        Duration.ofMillis(50),
        () -> {
          assertTrue(seen.get() >= 5, "tokens so far: " + seen);
          return null;
        });

    // The hosting node leaves: remember-entities restarts the replica on the other worker node.
    nodes.stop(host);
    assertEquals(expected, moving.get(2, TimeUnit.MINUTES), "the moved stream, token for token");
    wait.awaitAssert(
        WAIT,
        () -> {
          assertEquals(Set.of("demo#0"), hosted(other));
          return null;
        });
    generateThrough(gateway, "r2");
    wait.awaitAssert(
        WAIT,
        () -> {
          JsonNode moved = clusterView(gateway);
          assertEquals(nodeName(other), replica(moved, "demo#0").get("node").asText());
          return null;
        });
  }

  private static String nodeName(TroupeNode node) {
    return ClusterViewProtocol.nodeName(node.address());
  }

  private static JsonNode replica(JsonNode view, String id) {
    for (JsonNode r : view.get("replicas")) if (r.get("id").asText().equals(id)) return r;
    throw new AssertionError(id + " is not in " + view);
  }

  /** {@code GET /v1/cluster} on {@code gateway}. */
  private static JsonNode clusterView(TroupeNode gateway) {
    try {
      HttpResponse<String> r =
          HttpClient.newHttpClient()
              .send(
                  HttpRequest.newBuilder(
                          URI.create("http://127.0.0.1:" + gateway.httpPort() + "/v1/cluster"))
                      .header("Authorization", "Bearer sk-multi")
                      .timeout(WAIT)
                      .build(),
                  HttpResponse.BodyHandlers.ofString());
      assertEquals(200, r.statusCode(), r.body());
      return Json.mapper().readTree(r.body());
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }
}
