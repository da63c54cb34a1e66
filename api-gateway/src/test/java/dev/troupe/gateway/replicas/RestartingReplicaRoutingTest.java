package dev.troupe.gateway.replicas;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.troupe.protocol.cluster.GenerationRequest;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Command;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GetStatus;
import dev.troupe.protocol.cluster.SamplingParams;
import dev.troupe.protocol.cluster.WorkerStatus;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * New requests during an outage go to replicas known to be live: a replica whose node left the
 * cluster (it is being restarted elsewhere, which holds requests for tens of seconds) is not chosen
 * while another replica can serve, and becomes a candidate again once it answers a status probe.
 * Replica 0 runs in a second actor system, standing for another node.
 */
class RestartingReplicaRoutingTest {
  private static final ActorTestKit gateway = ActorTestKit.create("gateway");
  private static final ActorTestKit otherNode = ActorTestKit.create("worker-node");
  private static final Duration WAIT = Duration.ofSeconds(10);

  @AfterAll
  static void stop() {
    otherNode.shutdownTestKit();
    gateway.shutdownTestKit();
  }

  private static GenerationRequest request(String id) {
    SamplingParams p = SamplingParams.builder().temperature(0.0).maxTokens(1).build();
    return GenerationRequest.chat(id, List.of(Map.of("role", "user", "content", "hi")), p);
  }

  private static List<String> routeFour(ReplicaSelector selector, ServedModel model) {
    List<String> chosen = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      var d = selector.route(model, request("r" + i), 64).toCompletableFuture().join();
      d.lease().close();
      chosen.add(d.replica().entityId());
    }
    return chosen;
  }

  /** Round-robin over {@code refs}, reachability as {@code liveness} says. */
  private static ReplicaSelector selector(
      Liveness liveness, java.util.function.Function<String, ActorRef<Command>> refs) {
    return new ReplicaSelector(
        gateway.system(),
        refs::apply,
        liveness,
        new RoutingTable(),
        RoutingSettings.DEFAULTS.withCacheAware(false),
        ReplicaSelector.Recorder.NONE,
        PromptTokenizer.NONE,
        Duration.ofSeconds(5));
  }

  /** The replica of a generation's second attempt (a continuation), avoiding {@code avoid}. */
  private static String continuation(
      ReplicaSelector selector, ServedModel model, Set<String> avoid) {
    var first = selector.route(model, request("c"), 64).toCompletableFuture().join();
    first.lease().close();
    var attempts = selector.attempts(model, first);
    attempts.next(Set.of()); // the first attempt: the routing decision
    return attempts.next(avoid).orElseThrow().entityId();
  }

  @Test
  void aReplicaWhoseNodeLeftIsNotChosenWhileALiveOneCanServe() {
    TestProbe<Command> remote = otherNode.createTestProbe(); // m#0, on the node that is lost
    TestProbe<Command> local = gateway.createTestProbe(); // m#1
    Map<String, ActorRef<Command>> refs = Map.of("m#0", remote.ref(), "m#1", local.ref());
    ServedModel model = new ServedModel("m", 2, "m", null, 0);
    Liveness liveness = Liveness.assumeAllLive();
    ReplicaSelector directory = selector(liveness, refs::get);
    liveness.located("m#0", remote.ref());
    liveness.located("m#1", local.ref());
    assertEquals(List.of("m#0", "m#1", "m#0", "m#1"), routeFour(directory, model));

    // m#0's node is removed from the cluster: sharding restarts m#0 elsewhere.
    liveness.removed(remote.ref().path().address());
    assertEquals(
        List.of("m#1", "m#1", "m#1", "m#1"), routeFour(directory, model), "live replica only");
    assertEquals(Liveness.State.RESTARTING, liveness.state("m#0"));
    assertEquals("m#1", continuation(directory, model, Set.of()), "continuations too prefer it");
    assertEquals(
        "m#0",
        continuation(directory, model, Set.of("m#1")),
        "a restarting replica is better than none");

    // The directory probes the restarting replica; once it answers, it is chosen again.
    GetStatus probe = remote.expectMessageClass(GetStatus.class, WAIT);
    remote.expectNoMessage(Duration.ofMillis(200)); // one probe in flight, however many requests
    probe.replyTo().tell(new WorkerStatus("m#0", "m", 64, "fcfs", 0, 0, 0, 0, 16, 0, 0, 0));
    local.awaitAssert(
        WAIT,
        () -> {
          assertEquals(Liveness.State.UNKNOWN, liveness.state("m#0"));
          return null;
        });
    List<String> after = routeFour(directory, model);
    assertEquals(2, after.stream().filter("m#0"::equals).count(), "back in turn: " + after);
  }

  @Test
  void withOnlyRestartingReplicasTheyAreStillChosen() {
    TestProbe<Command> remote = otherNode.createTestProbe();
    ServedModel model = new ServedModel("solo", 1, "solo", null, 0);
    Liveness liveness = Liveness.assumeAllLive();
    ReplicaSelector directory = selector(liveness, id -> remote.ref());
    liveness.located("solo#0", remote.ref());
    liveness.removed(remote.ref().path().address());
    assertEquals(
        List.of("solo#0", "solo#0", "solo#0", "solo#0"),
        routeFour(directory, model),
        "waiting for the only replica beats a 503");
  }
}
