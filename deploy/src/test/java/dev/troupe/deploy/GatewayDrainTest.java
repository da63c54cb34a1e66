package dev.troupe.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import java.net.ConnectException;
import java.net.Socket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.pekko.actor.CoordinatedShutdown;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A gateway node that is told to stop (SIGTERM: its Coordinated Shutdown with the JVM-exit reason)
 * while it streams an answer from a worker on another node: the stream finishes, token for token,
 * within the drain bound, and only then does the node go; its HTTP port stops taking connections at
 * once. (Pekko HTTP's graceful termination closes a connection whose response has begun at once — a
 * streamed body is not waited for — so the stream was cut 0.05–3 s after the signal, while a
 * non-streamed answer, still pending, completed.)
 */
class GatewayDrainTest {
  private static final Duration WAIT = Duration.ofSeconds(90);
  private static final int TOKENS = 400;
  private static final Config TEST =
      ConfigFactory.parseString(
          """
          troupe.worker.engine.num-blocks = 48
          pekko.cluster.gossip-interval = 300ms
          pekko.cluster.leader-actions-interval = 300ms
          """);

  private final LoopbackNodes nodes = new LoopbackNodes(TEST, "sk-drain");

  @AfterEach
  void stopAll() {
    nodes.close();
  }

  private TroupeNode start(Path dir, String roles, String seed) throws Exception {
    return nodes.start(dir, roles, seed, "--shutdown-timeout", "60");
  }

  @Test
  void aStreamInFlightFinishesTokenForTokenWhileTheGatewayDrains(@TempDir Path dir)
      throws Exception {
    TroupeNode worker = start(dir.resolve("w"), "worker", null);
    String seed = "127.0.0.1:" + worker.address().getPort().get();
    TroupeNode gateway = start(dir.resolve("g"), "gateway", seed);
    TestProbe<Object> wait = ActorTestKit.create(gateway.system()).createTestProbe();
    wait.awaitAssert(
        WAIT,
        () -> {
          long up = 0;
          for (var m : Cluster.get(gateway.system()).state().getMembers())
            if (m.status() == MemberStatus.up()) up++;
          assertEquals(2, up);
          return null;
        });
    int port = gateway.httpPort();
    ChatClient client = new ChatClient(port, "sk-drain");
    List<Integer> expected = ChatClient.tokenIds(client.whole(TOKENS).get(2, TimeUnit.MINUTES));
    assertEquals(TOKENS, expected.size());

    AtomicInteger seen = new AtomicInteger();
    var stream = client.stream(TOKENS, seen);
    wait.awaitAssert(
        WAIT,
        Duration.ofMillis(20),
        () -> {
          assertTrue(seen.get() >= 8, "tokens so far: " + seen);
          return null;
        });
    // SIGTERM to the gateway's JVM: what Main's shutdown hook runs.
    CoordinatedShutdown.get(gateway.system()).run(CoordinatedShutdown.jvmExitReason());
    wait.awaitAssert(
        WAIT,
        Duration.ofMillis(20),
        () -> {
          assertTrue(refused(port), "the HTTP port takes no new connection once draining");
          return null;
        });
    assertTrue(seen.get() < TOKENS, "the stream was still in flight when the port closed");

    assertEquals(expected, stream.get(2, TimeUnit.MINUTES), "the stream, token for token");
    gateway.system().getWhenTerminated().toCompletableFuture().get(2, TimeUnit.MINUTES);
  }

  private static boolean refused(int port) {
    try (Socket s = new Socket("127.0.0.1", port)) {
      return false;
    } catch (ConnectException e) {
      return true;
    } catch (Exception e) {
      return false;
    }
  }
}
