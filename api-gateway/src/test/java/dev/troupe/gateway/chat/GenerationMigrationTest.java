package dev.troupe.gateway.chat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import dev.troupe.gateway.http.ApiException;
import dev.troupe.gateway.replicas.NodeLost;
import dev.troupe.gateway.replicas.ReplicaSelector;
import dev.troupe.protocol.cluster.GenerationRequest;
import dev.troupe.protocol.cluster.GenerationRequest.ResumedChoice;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Accepted;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Cancel;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.ChoiceUpdate;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Command;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.ErrorKind;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Failed;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.FinishReason;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Generate;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationEvent;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationUpdate;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Migrate;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Started;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Usage;
import dev.troupe.protocol.cluster.SamplingParams;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.eventstream.EventStream;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.stream.javadsl.Sink;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * The gateway's side of request migration, with test workers that die (or are cut off, or hand off)
 * mid-stream: the request continues on another replica with the tokens already delivered, the
 * consumer sees one uninterrupted stream, and when no replica can take it the request ends with a
 * 503 — never a hang. Every message crosses serialization.
 */
class GenerationMigrationTest {
  private static final ActorTestKit testKit =
      ActorTestKit.create(
          ConfigFactory.parseString("pekko.actor.serialize-messages = on")
              .withFallback(ConfigFactory.load()));
  private static final Duration WAIT = Duration.ofSeconds(10);

  @AfterAll
  static void stop() {
    testKit.shutdownTestKit();
  }

  /** A worker replica: every command goes to {@code seen}; the test answers for it. */
  private static Behavior<Command> worker(ActorRef<Command> seen) {
    return Behaviors.receiveMessage(
        m -> {
          seen.tell(m);
          return Behaviors.same();
        });
  }

  /**
   * Replicas by entity id; a removed one is unreachable for the owner. Records the replicas the
   * owner reported as not acknowledging.
   */
  private static final class TestReplicas implements ReplicaSelector.Attempts {
    final Map<String, ActorRef<Command>> live = new LinkedHashMap<>();
    final Set<String> unacknowledged = ConcurrentHashMap.newKeySet();

    @Override
    public String model() {
      return "m";
    }

    @Override
    public Optional<ReplicaSelector.Replica> next(Set<String> avoid) {
      for (var e : live.entrySet())
        if (!avoid.contains(e.getKey()))
          return Optional.of(new ReplicaSelector.Replica(e.getKey(), e.getValue()));
      return live.entrySet().stream()
          .findFirst()
          .map(e -> new ReplicaSelector.Replica(e.getKey(), e.getValue()));
    }

    @Override
    public boolean reachable(ActorRef<?> worker) {
      return true;
    }

    @Override
    public void located(String entityId, ActorRef<?> worker) {}

    @Override
    public void unacknowledged(String entityId) {
      unacknowledged.add(entityId);
    }

    @Override
    public org.apache.pekko.actor.Address lastSeenAt(String entityId) {
      return null;
    }
  }

  private record Replica(String id, ActorRef<Command> ref, TestProbe<Command> seen) {}

  private static Replica spawn(TestReplicas replicas, String id) {
    TestProbe<Command> seen = testKit.createTestProbe();
    ActorRef<Command> ref = testKit.spawn(worker(seen.ref()));
    replicas.live.put(id, ref);
    return new Replica(id, ref, seen);
  }

  /** A generation's events on {@code picker}'s replicas, acknowledged within 5 s. */
  private static org.apache.pekko.stream.javadsl.Source<GenerationEvent, org.apache.pekko.NotUsed>
      events(TestReplicas picker, MigrationSettings settings, GenerationRequest r) {
    return GenerationOwner.events(
        testKit.system(), picker, r, settings.withAttemptTimeout(Duration.ofSeconds(5)));
  }

  /**
   * Migration on, with a deadline no test here reaches. The deadline also bounds the wait for the
   * first acknowledgement, counted from the request's start: a short one would race the test
   * thread's {@code Accepted} on a loaded machine (CI failed so: a Cancel from the deadline).
   */
  private static final MigrationSettings STEADY =
      new MigrationSettings(true, 3, Duration.ofSeconds(30), Duration.ofMillis(50));

  /** A deadline to reach: well above the test thread's time to answer, short enough to wait for. */
  private static final MigrationSettings SHORT_DEADLINE =
      new MigrationSettings(true, 3, Duration.ofSeconds(2), Duration.ofMillis(50));

  private static GenerationRequest request(String id, int n) {
    SamplingParams p =
        SamplingParams.builder().n(n).temperature(0.8).seed(7L).maxTokens(6).logprobs(1).build();
    return GenerationRequest.chat(id, List.of(Map.of("role", "user", "content", "hi")), p);
  }

  private static CompletionStage<List<GenerationEvent>> run(
      TestReplicas picker, MigrationSettings settings, GenerationRequest r) {
    return events(picker, settings, r).runWith(Sink.seq(), testKit.system());
  }

  private static Generate generate(Replica r) {
    return r.seen().expectMessageClass(Generate.class, WAIT);
  }

  private static Started started(Replica r) {
    return new Started(r.id(), r.ref(), 0, 3, null, null);
  }

  private static ChoiceUpdate token(int index, int id) {
    return new ChoiceUpdate(index, "t" + id, List.of(id), null, null, null);
  }

  private static ChoiceUpdate last(int index, int id) {
    return new ChoiceUpdate(index, "t" + id, List.of(id), null, FinishReason.LENGTH, null);
  }

  private static List<Integer> tokens(List<GenerationEvent> events, int choice) {
    List<Integer> out = new ArrayList<>();
    for (GenerationEvent e : events)
      for (ChoiceUpdate c : ((GenerationUpdate) e).choices())
        if (c.index() == choice) out.addAll(c.tokenIds());
    return out;
  }

  /** Starts "r" (n = 2) on {@code a}: accepted, then two steps of tokens. */
  private static Generate startOn(Replica a, String id) {
    Generate g = generate(a);
    assertTrue(g.acknowledge(), "the gateway asks who serves it");
    assertNull(g.request().resume(), "a new request");
    String attempt = g.request().requestId();
    g.replyTo().tell(new Accepted(attempt, a.id(), a.ref()));
    g.replyTo()
        .tell(new GenerationUpdate(attempt, started(a), List.of(token(0, 5), token(1, 6)), null));
    g.replyTo().tell(new GenerationUpdate(attempt, null, List.of(token(0, 7), last(1, 8)), null));
    return g;
  }

  /** The continuation on {@code b}: asserts what it resumes from, then finishes choice 0. */
  private static void continueOn(Replica b, String id) {
    Generate g = generate(b);
    GenerationRequest r = g.request();
    assertEquals(id + "~2", r.requestId(), "each attempt has its own id");
    assertEquals(
        List.of(new ResumedChoice(List.of(5, 7), false), new ResumedChoice(List.of(6, 8), true)),
        r.resume().choices(),
        "the tokens already delivered, choice 1 already ended");
    assertEquals(request(id, 2).sampling(), r.sampling(), "the same request otherwise");
    assertEquals(request(id, 2).messages(), r.messages());
    g.replyTo().tell(new Accepted(r.requestId(), b.id(), b.ref()));
    g.replyTo().tell(new GenerationUpdate(r.requestId(), started(b), List.of(token(0, 9)), null));
    g.replyTo()
        .tell(new GenerationUpdate(r.requestId(), null, List.of(last(0, 10)), new Usage(3, 6, 0)));
  }

  private static void assertOneUninterruptedStream(List<GenerationEvent> events, String id) {
    for (GenerationEvent e : events) assertEquals(id, e.requestId(), "the client's id throughout");
    List<GenerationUpdate> updates = events.stream().map(e -> (GenerationUpdate) e).toList();
    assertNotNull(updates.get(0).started());
    assertEquals(1, updates.stream().filter(u -> u.started() != null).count(), "one Started");
    assertEquals(List.of(5, 7, 9, 10), tokens(events, 0));
    assertEquals(List.of(6, 8), tokens(events, 1));
    assertEquals(new Usage(3, 6, 0), updates.get(updates.size() - 1).usage());
  }

  @Test
  void aWorkerThatDiesMidStreamIsReplacedByDeathWatch() {
    TestReplicas picker = new TestReplicas();
    Replica a = spawn(picker, "m#0");
    Replica b = spawn(picker, "m#1");
    var events = run(picker, STEADY, request("die", 2));
    startOn(a, "die");
    testKit.stop(a.ref()); // the worker is gone: death watch, no timeout
    continueOn(b, "die");
    assertOneUninterruptedStream(events.toCompletableFuture().join(), "die");
  }

  @Test
  void anUnreachableNodeMovesTheRequestAtOnceAndLateEventsAreDropped() {
    TestReplicas picker = new TestReplicas();
    Replica a = spawn(picker, "m#0");
    Replica b = spawn(picker, "m#1");
    var events = run(picker, STEADY, request("cut", 2));
    Generate first = startOn(a, "cut");
    // The failure detector marks a's node unreachable; a itself is still running.
    a.seen().expectNoMessage(Duration.ofMillis(200));
    testKit
        .system()
        .eventStream()
        .tell(new EventStream.Publish<>(new NodeLost(a.ref().path().address(), "unreachable")));
    assertEquals("cut", a.seen().expectMessageClass(Cancel.class, WAIT).requestId());
    // a's late output (it had not heard of the loss) must not reach the client.
    first.replyTo().tell(new GenerationUpdate("cut", null, List.of(token(0, 99)), null));
    continueOn(b, "cut");
    assertOneUninterruptedStream(events.toCompletableFuture().join(), "cut");
  }

  @Test
  void aReplicaHandedOffToAnotherNodeHandsItsRequestsBack() {
    TestReplicas picker = new TestReplicas();
    Replica a = spawn(picker, "m#0");
    Replica b = spawn(picker, "m#1");
    var events = run(picker, STEADY, request("moved", 2));
    Generate first = startOn(a, "moved");
    first.replyTo().tell(new Migrate("moved", "m#0 stopped"));
    continueOn(b, "moved");
    assertOneUninterruptedStream(events.toCompletableFuture().join(), "moved");
  }

  @Test
  void aLostRequestNoReplicaTakesEndsWithA503WithinTheDeadline() {
    TestReplicas picker = new TestReplicas();
    Replica a = spawn(picker, "m#0");
    var events = run(picker, SHORT_DEADLINE, request("alone", 2));
    startOn(a, "alone");
    picker.live.clear(); // its only replica's node is unreachable
    long start = System.nanoTime();
    testKit.stop(a.ref());
    List<GenerationEvent> got = events.toCompletableFuture().join();
    long ms = (System.nanoTime() - start) / 1_000_000;
    Failed f = assertInstanceOf(Failed.class, got.get(got.size() - 1));
    assertEquals(ErrorKind.OVERLOADED, f.kind(), "a 503, an error event on a stream");
    assertTrue(f.message().contains("could continue it within 2 s"), f.message());
    assertEquals(List.of(5, 7), tokens(got.subList(0, got.size() - 1), 0));
    assertTrue(ms >= 1_900, "gave up at the deadline, not before: " + ms + " ms");
  }

  @Test
  void aReplicaThatComesBackWithinTheDeadlineTakesTheRequest() {
    TestReplicas picker = new TestReplicas();
    Replica a = spawn(picker, "m#0");
    var events =
        run(
            picker,
            new MigrationSettings(true, 3, Duration.ofSeconds(5), Duration.ofMillis(50)),
            request("back", 2));
    startOn(a, "back");
    picker.live.clear();
    testKit.stop(a.ref());
    a.seen().expectNoMessage(Duration.ofMillis(300)); // nothing reachable: it waits
    Replica b = spawn(picker, "m#1"); // the replica restarted elsewhere
    continueOn(b, "back");
    assertOneUninterruptedStream(events.toCompletableFuture().join(), "back");
  }

  @Test
  void aNewRequestWithNoReachableReplicaIsA503AtOnce() {
    TestReplicas picker = new TestReplicas();
    long start = System.nanoTime();
    var first =
        GenerationStream.firstEvent(events(picker, STEADY, request("none", 1)), testKit.system());
    CompletionException e =
        assertThrows(CompletionException.class, () -> first.toCompletableFuture().join());
    ApiException api = assertInstanceOf(ApiException.class, e.getCause());
    assertEquals(503, api.status());
    assertTrue(api.getMessage().contains("No replica of model `m` is reachable"), api.getMessage());
    assertTrue((System.nanoTime() - start) / 1_000_000 < 2_000, "at once");
  }

  /** Migration with a short accept timeout (300 ms) under the 5 s ask timeout. */
  private static final MigrationSettings SHORT_ACCEPT =
      new MigrationSettings(
          true, 3, Duration.ofSeconds(5), Duration.ofMillis(50), Duration.ofMillis(300));

  @Test
  void aNewRequestAReplicaDoesNotAcknowledgeMovesToALiveOneInsteadOfA503() {
    // m#0 is being restarted (sharding holds what is sent to it until the model is loaded); m#1
    // is live. The request must not wait for m#0 until the ask timeout and then fail.
    TestReplicas picker = new TestReplicas();
    Replica a = spawn(picker, "m#0");
    Replica b = spawn(picker, "m#1");
    long start = System.nanoTime();
    var events = run(picker, SHORT_ACCEPT, request("slow", 2));
    Generate first = generate(a);
    assertEquals("slow", first.request().requestId());
    // No Accepted from m#0: after the accept timeout the attempt is cancelled and moves to m#1.
    Generate g = generate(b);
    long ms = (System.nanoTime() - start) / 1_000_000;
    assertTrue(ms < 4_000, "moved after the accept timeout, not the ask timeout: " + ms + " ms");
    assertEquals(
        "slow", a.seen().expectMessageClass(Cancel.class, WAIT).requestId(), "not double-run");
    assertNull(g.request().resume(), "nothing was delivered: it starts over");
    String attempt = g.request().requestId();
    assertEquals("slow~2", attempt);
    assertEquals(Set.of("m#0"), picker.unacknowledged, "avoided from now on");
    // m#0 comes up late and answers the cancelled attempt: nothing of it reaches the client.
    first.replyTo().tell(new Accepted("slow", a.id(), a.ref()));
    first.replyTo().tell(new GenerationUpdate("slow", started(a), List.of(token(0, 99)), null));
    g.replyTo().tell(new Accepted(attempt, b.id(), b.ref()));
    g.replyTo()
        .tell(new GenerationUpdate(attempt, started(b), List.of(token(0, 5), token(1, 6)), null));
    g.replyTo()
        .tell(
            new GenerationUpdate(
                attempt, null, List.of(last(0, 7), last(1, 8)), new Usage(3, 4, 0)));
    List<GenerationEvent> got = events.toCompletableFuture().join();
    for (GenerationEvent e : got) assertInstanceOf(GenerationUpdate.class, e, "no error: " + e);
    assertEquals(List.of(5, 7), tokens(got, 0));
    assertEquals(List.of(6, 8), tokens(got, 1));
    assertEquals("slow", got.get(0).requestId(), "the client's id");
  }

  @Test
  void aSlowAcknowledgementWithNoOtherReplicaIsWaitedFor() {
    TestReplicas picker = new TestReplicas();
    Replica a = spawn(picker, "m#0");
    var events = run(picker, SHORT_ACCEPT, request("lone", 1));
    Generate g = generate(a);
    a.seen()
        .expectNoMessage(Duration.ofMillis(800)); // past the accept timeout: no Cancel, no retry
    g.replyTo().tell(new Accepted("lone", a.id(), a.ref()));
    g.replyTo()
        .tell(new GenerationUpdate("lone", started(a), List.of(last(0, 5)), new Usage(3, 1, 0)));
    List<GenerationEvent> got = events.toCompletableFuture().join();
    assertEquals(List.of(5), tokens(got, 0));
  }

  @Test
  void movesAreBounded() {
    TestReplicas picker = new TestReplicas();
    Replica a = spawn(picker, "m#0");
    var settings = new MigrationSettings(true, 2, Duration.ofSeconds(5), Duration.ofMillis(50));
    var events = run(picker, settings, request("bounce", 1));
    for (int i = 1; i <= 3; i++) {
      Generate g = generate(a);
      String attempt = g.request().requestId();
      g.replyTo().tell(new Accepted(attempt, a.id(), a.ref()));
      if (i == 1)
        g.replyTo().tell(new GenerationUpdate(attempt, started(a), List.of(token(0, 5)), null));
      g.replyTo().tell(new Migrate(attempt, "m#0 stopped"));
    }
    List<GenerationEvent> got = events.toCompletableFuture().join();
    Failed f = assertInstanceOf(Failed.class, got.get(got.size() - 1));
    assertEquals(
        "The model worker generating this request was lost (m#0 stopped) and it has already moved"
            + " 2 times; retry later.",
        f.message());
  }

  @Test
  void aBeamSearchStartsOverAndItsClientSeesOneStart() {
    TestReplicas picker = new TestReplicas();
    Replica a = spawn(picker, "m#0");
    Replica b = spawn(picker, "m#1");
    GenerationRequest beam =
        GenerationRequest.chat(
            "beam",
            List.of(Map.of("role", "user", "content", "hi")),
            SamplingParams.builder()
                .n(2)
                .useBeamSearch(true)
                .temperature(0.0)
                .maxTokens(4)
                .build());
    var events = run(picker, STEADY, beam);
    Generate g = generate(a);
    g.replyTo().tell(new Accepted("beam", a.id(), a.ref()));
    g.replyTo().tell(new GenerationUpdate("beam", started(a), List.of(), null));
    g.replyTo().tell(new Migrate("beam", "m#0 stopped"));
    Generate again = generate(b);
    assertNull(again.request().resume(), "beams report at the end: it starts over");
    String id = again.request().requestId();
    again.replyTo().tell(new GenerationUpdate(id, started(b), List.of(), null));
    again
        .replyTo()
        .tell(
            new GenerationUpdate(
                id,
                null,
                List.of(
                    new ChoiceUpdate(0, "ab", List.of(1, 2), null, FinishReason.LENGTH, null),
                    new ChoiceUpdate(1, "ac", List.of(1, 3), null, FinishReason.LENGTH, null)),
                new Usage(3, 4, 0)));
    List<GenerationEvent> got = events.toCompletableFuture().join();
    assertEquals(1, got.stream().filter(e -> ((GenerationUpdate) e).started() != null).count());
    assertEquals(List.of(1, 2), tokens(got, 0));
  }
}
