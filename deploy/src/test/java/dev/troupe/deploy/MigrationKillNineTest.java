package dev.troupe.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import dev.troupe.protocol.Json;
import dev.troupe.protocol.cluster.GenerationRequest;
import dev.troupe.protocol.cluster.ModelWorkerProtocol;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Accepted;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Cancel;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Generate;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationEvent;
import dev.troupe.protocol.cluster.SamplingParams;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.typed.Cluster;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Request migration against real worker JVMs: a gateway node here and two worker nodes as child
 * JVMs, the demo model with one replica on each. Two seeded streams and a non-streaming request are
 * in flight when the node hosting one replica is killed with SIGKILL: each completes, its token ids
 * equal to a failure-free run of the same request, and a request sent right after the kill is
 * served by the live replica — long before anything is downed (the Split Brain Resolver is set to
 * wait two minutes). Then the other worker node is killed too: a non-streaming request in flight
 * gets a 503 status once the migration deadline has passed, and a new one a 503 at once.
 */
class MigrationKillNineTest {
  /** Shared by every node of the test cluster (the child JVMs read it too). */
  static final String CLUSTER =
      """
      pekko.coordinated-shutdown.exit-jvm = off
      pekko.coordinated-shutdown.run-by-jvm-shutdown-hook = off
      pekko.cluster.jmx.multi-mbeans-in-same-jvm = on
      pekko.cluster.log-info = off
      troupe.worker.engine.num-blocks = 96
      troupe.worker.metrics-log-interval = 0s
      pekko.cluster.sharding.entity-restart-backoff = 500ms
      pekko.cluster.sharding.retry-interval = 300ms
      pekko.cluster.sharding.rebalance-interval = 1s
      pekko.cluster.gossip-interval = 300ms
      pekko.cluster.leader-actions-interval = 300ms
      # Nothing is downed while the test runs: requests must move on reachability alone.
      pekko.cluster.split-brain-resolver.stable-after = 120s
      troupe.gateway.migration.deadline = 6s
      """;

  private static final Duration WAIT = Duration.ofSeconds(120);
  private static final String KEY = "sk-kill";
  private static final int TOKENS = 96;

  @TempDir Path dir;
  private final List<Process> children = new ArrayList<>();
  private TroupeNode gateway;
  private ChatClient client;

  @AfterEach
  void stopAll() {
    for (Process p : children) p.destroyForcibly();
    if (gateway != null) gateway.close();
  }

  private record Worker(Process process, int port) {}

  /** Starts a worker node JVM; {@link #ready} waits for it. */
  private Process startWorker(String name, String seed) throws Exception {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    Process p =
        new ProcessBuilder(
                java,
                "-Xmx640m",
                "--add-modules",
                "jdk.incubator.vector",
                "--add-opens",
                "java.base/java.nio=ALL-UNNAMED",
                "--add-opens",
                "java.base/sun.nio.ch=ALL-UNNAMED",
                "-cp",
                System.getProperty("java.class.path"),
                WorkerNodeMain.class.getName(),
                dir.resolve(name).toString(),
                seed,
                dir.resolve(name + ".port").toString(),
                "--replicas",
                "demo=2")
            .redirectErrorStream(true)
            .redirectOutput(dir.resolve(name + ".log").toFile())
            .start();
    children.add(p);
    return p;
  }

  /** The worker node's cluster port once it is up. */
  private Worker ready(String name, Process p) throws Exception {
    Path ready = dir.resolve(name + ".port");
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (!Files.exists(ready)) {
      assertTrue(p.isAlive(), name + " died: " + Files.readString(dir.resolve(name + ".log")));
      assertTrue(System.nanoTime() < deadline, name + " did not start");
      Thread.sleep(200);
    }
    return new Worker(p, Integer.parseInt(Files.readString(ready).trim()));
  }

  /** The cluster port of the node hosting {@code entityId} now (asked through the gateway). */
  private int placement(String entityId) {
    ActorTestKit kit = ActorTestKit.create(gateway.system());
    TestProbe<GenerationEvent> probe = kit.createTestProbe();
    String id = "where-" + System.nanoTime();
    SamplingParams p = SamplingParams.builder().temperature(0.0).maxTokens(1).build();
    var ref =
        ClusterSharding.get(gateway.system()).entityRefFor(ModelWorkerProtocol.TYPE_KEY, entityId);
    ref.tell(new Generate(GenerationRequest.prompt(id, "x", p), probe.ref(), true));
    while (true) {
      GenerationEvent e = probe.receiveMessage(WAIT);
      if (e instanceof Accepted a) {
        ref.tell(new Cancel(id));
        return a.worker().path().address().getPort().get();
      }
      if (!(e instanceof ModelWorkerProtocol.Migrate)) continue; // moving: ask again
      ref.tell(new Generate(GenerationRequest.prompt(id + "b", "x", p), probe.ref(), true));
    }
  }

  private CompletableFuture<HttpResponse<String>> whole(int maxTokens) {
    return client.whole(maxTokens);
  }

  private static List<Integer> tokenIds(HttpResponse<String> r) {
    return ChatClient.tokenIds(r);
  }

  private CompletableFuture<List<Integer>> stream(int maxTokens, AtomicInteger seen) {
    return client.stream(maxTokens, seen);
  }

  @Test
  void inFlightRequestsSurviveTheirWorkerNodesSigkillTokenExact() throws Exception {
    gateway =
        TroupeNode.start(
            LaunchOptions.parse(
                List.of(
                    "--roles",
                    "gateway",
                    "--port",
                    "0",
                    "--cluster-port",
                    "0",
                    "--management-port",
                    "-1",
                    "--api-key",
                    KEY,
                    "--data-dir",
                    dir.resolve("gateway").toString(),
                    "--replicas",
                    "demo=2"),
                null),
            ConfigFactory.parseString(CLUSTER + "\npekko.loglevel = WARNING"),
            key -> {});
    client = new ChatClient(gateway.httpPort(), KEY);
    String seed = "127.0.0.1:" + gateway.address().getPort().get();
    Process pa = startWorker("a", seed);
    Process pb = startWorker("b", seed);
    Worker a = ready("a", pa);
    Worker b = ready("b", pb);
    TestProbe<Object> wait = ActorTestKit.create(gateway.system()).createTestProbe();
    wait.awaitAssert(
        WAIT,
        Duration.ofMillis(500),
        () -> {
          long up = 0;
          for (var m : Cluster.get(gateway.system()).state().getMembers())
            if (m.status() == MemberStatus.up()) up++;
          assertEquals(3, up);
          // one replica per worker node (the second to join takes one over)
          assertNotEquals(placement("demo#0"), placement("demo#1"));
          return null;
        });
    int hostOf0 = placement("demo#0");
    Worker victim = hostOf0 == a.port() ? a : b;
    Worker survivor = victim == a ? b : a;

    // The failure-free answer of the seeded request.
    List<Integer> expected = tokenIds(whole(TOKENS).get(2, TimeUnit.MINUTES));
    assertEquals(TOKENS, expected.size());

    // Two streams (round-robin: one per replica) and a non-streaming request, all in flight.
    AtomicInteger seen1 = new AtomicInteger(), seen2 = new AtomicInteger();
    var s1 = stream(TOKENS, seen1);
    var s2 = stream(TOKENS, seen2);
    var n1 = whole(TOKENS);
    wait.awaitAssert(
        WAIT,
        Duration.ofMillis(50),
        () -> {
          assertTrue(seen1.get() >= 8 && seen2.get() >= 8, seen1 + " " + seen2);
          return null;
        });
    victim.process().destroyForcibly(); // SIGKILL
    long killed = System.nanoTime();
    var afterKill = whole(8);

    assertEquals(expected, s1.get(2, TimeUnit.MINUTES), "stream 1, token for token");
    assertEquals(expected, s2.get(2, TimeUnit.MINUTES), "stream 2, token for token");
    assertEquals(expected, tokenIds(n1.get(2, TimeUnit.MINUTES)), "the non-streaming answer");
    assertEquals(8, tokenIds(afterKill.get(2, TimeUnit.MINUTES)).size());
    long seconds = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - killed);
    assertTrue(seconds < 60, "served by the live replica, nothing downed: " + seconds + " s");
    assertEquals(3, countMembers(), "the killed node was not even downed yet");

    // The last worker node goes too: a request in flight ends with a real 503, a new one at once.
    var n2 = whole(400);
    Thread.sleep(1_000);
    survivor.process().destroyForcibly();
    HttpResponse<String> lost = n2.get(2, TimeUnit.MINUTES);
    assertEquals(503, lost.statusCode(), lost.body());
    assertTrue(lost.body().contains("could continue it"), lost.body());
    long start = System.nanoTime();
    HttpResponse<String> none = whole(8).get(1, TimeUnit.MINUTES);
    assertEquals(503, none.statusCode(), none.body());
    assertTrue(none.body().contains("is reachable right now"), none.body());
    assertEquals(
        "ServiceUnavailableError",
        Json.mapper().readTree(none.body()).path("error").path("type").asText(),
        none.body());
    assertTrue(TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - start) < 5, "at once");
  }

  private int countMembers() {
    int n = 0;
    for (var m : Cluster.get(gateway.system()).state().getMembers()) n++;
    return n;
  }
}
