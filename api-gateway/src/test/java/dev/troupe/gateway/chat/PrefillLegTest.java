package dev.troupe.gateway.chat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import dev.troupe.gateway.replicas.ReplicaSelector;
import dev.troupe.protocol.cluster.GenerationRequest;
import dev.troupe.protocol.cluster.KvHandle;
import dev.troupe.protocol.cluster.KvTransfer;
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
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.stream.KillSwitches;
import org.apache.pekko.stream.SharedKillSwitch;
import org.apache.pekko.stream.javadsl.Sink;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * The gateway's built-in prefill/decode path in a request's owner, with test workers: the prefill
 * leg (what it asks, that the client sees nothing of it), its handle passed to the decode replica,
 * and every way the leg can fail — the request is then served whole. Messages cross serialization.
 */
class PrefillLegTest {
  private static final ActorTestKit testKit =
      ActorTestKit.create(
          ConfigFactory.parseString("pekko.actor.serialize-messages = on")
              .withFallback(ConfigFactory.load()));
  private static final Duration WAIT = Duration.ofSeconds(10);
  private static final MigrationSettings SETTINGS =
      new MigrationSettings(true, 3, Duration.ofSeconds(30), Duration.ofMillis(50))
          .withAttemptTimeout(Duration.ofSeconds(5));
  private static final KvHandle HANDLE =
      new KvHandle("engine-p", List.of(4, 5, 6), "127.0.0.1", 7001, "r~prefill", 1);

  @AfterAll
  static void stop() {
    testKit.shutdownTestKit();
  }

  private record Replica(String id, ActorRef<Command> ref, TestProbe<Command> seen) {}

  /** The decode replicas, in order; the prefill replica is not among them. */
  private static final class Decoders implements ReplicaSelector.Attempts {
    final Map<String, ActorRef<Command>> live = new LinkedHashMap<>();
    final Set<String> unacknowledged = java.util.concurrent.ConcurrentHashMap.newKeySet();

    @Override
    public String model() {
      return "m";
    }

    @Override
    public Optional<ReplicaSelector.Replica> next(Set<String> avoid) {
      for (var e : live.entrySet())
        if (!avoid.contains(e.getKey()))
          return Optional.of(new ReplicaSelector.Replica(e.getKey(), e.getValue()));
      return Optional.empty();
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

  private static Replica replica(String id) {
    TestProbe<Command> seen = testKit.createTestProbe();
    ActorRef<Command> ref =
        testKit.spawn(
            Behaviors.receiveMessage(
                m -> {
                  seen.tell(m);
                  return Behaviors.same();
                }));
    return new Replica(id, ref, seen);
  }

  /** What the leg listener heard, in order. */
  private static final class Heard implements PrefillListener {
    final List<String> events = new CopyOnWriteArrayList<>();

    @Override
    public void prefilled(String replica, long nanos) {
      events.add("prefilled " + replica);
    }

    @Override
    public void failed(String replica, String why, long nanos) {
      events.add("failed " + replica);
    }

    @Override
    public void pullFailed(String replica, String why) {
      events.add("pull failed " + replica);
    }
  }

  /** A request set up to be split: P = m#0, decode replicas {@code decoders}. */
  private static final class Split {
    final Replica p = replica("m#0");
    final Decoders decoders = new Decoders();
    final Heard heard = new Heard();
    final AtomicInteger leases = new AtomicInteger(1);
    final SharedKillSwitch client = KillSwitches.shared("client");

    Replica decoder(String id) {
      Replica d = replica(id);
      decoders.live.put(id, d.ref());
      return d;
    }

    CompletionStage<List<GenerationEvent>> run(GenerationRequest r) {
      return run(r, SETTINGS);
    }

    CompletionStage<List<GenerationEvent>> run(GenerationRequest r, MigrationSettings settings) {
      ReplicaSelector.Prefill prefill =
          new ReplicaSelector.Prefill(
              new ReplicaSelector.Replica(p.id(), p.ref()), leases::decrementAndGet);
      return GenerationOwner.events(testKit.system(), decoders, r, settings, prefill, heard)
          .via(client.flow())
          .runWith(Sink.seq(), testKit.system());
    }
  }

  private static GenerationRequest request(String id) {
    SamplingParams p =
        SamplingParams.builder()
            .n(2)
            .temperature(0.8)
            .seed(7L)
            .maxTokens(6)
            .minTokens(2)
            .logprobs(1)
            .build();
    return GenerationRequest.chat(id, List.of(Map.of("role", "user", "content", "hi")), p)
        .toBuilder()
        .streamed(true)
        .promptTokenIds(List.of(1, 2, 3, 4, 5))
        .build();
  }

  private static Started started(Replica r) {
    return new Started(r.id(), r.ref(), 0, 5, null, null);
  }

  /** The prefill leg, checked for what vLLM's proxy sends a prefill instance. */
  private static Generate leg(Replica p, String id) {
    Generate g = p.seen().expectMessageClass(Generate.class, WAIT);
    GenerationRequest r = g.request();
    assertEquals(id + "~prefill", r.requestId());
    assertInstanceOf(KvTransfer.RemoteDecode.class, r.kvTransfer());
    assertEquals(1, r.sampling().n());
    assertEquals(1, r.sampling().maxTokens());
    assertEquals(0, r.sampling().minTokens());
    assertNull(r.sampling().logprobs());
    assertFalse(r.streamed());
    assertEquals(List.of(1, 2, 3, 4, 5), r.promptTokenIds(), "the same prompt ids");
    assertEquals(request(id).messages(), r.messages());
    return g;
  }

  /** P answers the leg: accepted, then its one token and the handle. */
  private static void prefilled(Replica p, Generate g) {
    String id = g.request().requestId();
    g.replyTo().tell(new Accepted(id, p.id(), p.ref()));
    g.replyTo()
        .tell(
            new GenerationUpdate(
                id,
                started(p),
                List.of(new ChoiceUpdate(0, "x", List.of(42), null, FinishReason.LENGTH, null)),
                new Usage(5, 1, 0),
                HANDLE));
  }

  /** D serves the request whole (or decodes it): two tokens per choice. */
  private static void decode(Replica d, Generate g) {
    String id = g.request().requestId();
    g.replyTo().tell(new Accepted(id, d.id(), d.ref()));
    g.replyTo()
        .tell(
            new GenerationUpdate(
                id,
                started(d),
                List.of(
                    new ChoiceUpdate(0, "a", List.of(7), null, null, null),
                    new ChoiceUpdate(1, "b", List.of(8), null, null, null)),
                null));
    g.replyTo()
        .tell(
            new GenerationUpdate(
                id,
                null,
                List.of(
                    new ChoiceUpdate(0, "c", List.of(9), null, FinishReason.LENGTH, null),
                    new ChoiceUpdate(1, "d", List.of(10), null, FinishReason.LENGTH, null)),
                new Usage(5, 4, 0)));
  }

  private static void assertDecodedByD(List<GenerationEvent> events, Replica d, String id) {
    List<Integer> ids = new ArrayList<>();
    for (GenerationEvent e : events) {
      assertEquals(id, e.requestId());
      GenerationUpdate u = (GenerationUpdate) e;
      assertNull(u.kvHandle(), "the client sees nothing of the prefill leg");
      if (u.started() != null) assertEquals(d.id(), u.started().servedBy());
      for (ChoiceUpdate c : u.choices()) ids.addAll(c.tokenIds());
    }
    assertEquals(List.of(7, 8, 9, 10), ids);
  }

  @Test
  void theDecodeReplicaGetsTheClientsRequestWithThePrefillsHandle() {
    Split s = new Split();
    Replica d = s.decoder("m#1");
    var events = s.run(request("r"));
    Generate g = leg(s.p, "r");
    d.seen().expectNoMessage(Duration.ofMillis(100)); // nothing goes to D before the handle
    prefilled(s.p, g);
    Generate dg = d.seen().expectMessageClass(Generate.class, WAIT);
    assertEquals("r", dg.request().requestId());
    assertEquals(HANDLE.toRemotePrefill(), dg.request().kvTransfer());
    assertEquals(request("r").sampling(), dg.request().sampling(), "the client's request");
    assertTrue(dg.request().streamed());
    decode(d, dg);
    assertDecodedByD(events.toCompletableFuture().join(), d, "r");
    assertEquals(List.of("prefilled m#0"), s.heard.events);
    assertEquals(0, s.leases.get(), "the leg's place in P's queue is released");
  }

  @Test
  void aFailedLegIsServedWholeOnTheDecodeReplica() {
    Split s = new Split();
    Replica d = s.decoder("m#1");
    var events = s.run(request("f"));
    Generate g = leg(s.p, "f");
    g.replyTo().tell(new Failed(g.request().requestId(), ErrorKind.OVERLOADED, "queue full", null));
    Generate dg = d.seen().expectMessageClass(Generate.class, WAIT);
    assertNull(dg.request().kvTransfer(), "served whole");
    decode(d, dg);
    assertDecodedByD(events.toCompletableFuture().join(), d, "f");
    assertEquals(List.of("failed m#0"), s.heard.events);
  }

  @Test
  void aPrefillWorkerThatDiesIsServedWhole() {
    Split s = new Split();
    Replica d = s.decoder("m#1");
    var events = s.run(request("dies"));
    Generate g = leg(s.p, "dies");
    g.replyTo().tell(new Accepted(g.request().requestId(), s.p.id(), s.p.ref()));
    testKit.stop(s.p.ref());
    Generate dg = d.seen().expectMessageClass(Generate.class, WAIT);
    assertNull(dg.request().kvTransfer());
    decode(d, dg);
    assertDecodedByD(events.toCompletableFuture().join(), d, "dies");
    assertEquals(0, s.leases.get());
  }

  @Test
  void aLegNotAcknowledgedInTimeIsServedWholeAndItsReplicaAvoided() {
    Split s = new Split();
    Replica d = s.decoder("m#1");
    MigrationSettings quick =
        new MigrationSettings(
            true, 3, Duration.ofSeconds(30), Duration.ofMillis(50), Duration.ofMillis(300));
    var events = s.run(request("slow"), quick);
    leg(s.p, "slow"); // never acknowledged
    assertEquals("slow~prefill", s.p.seen().expectMessageClass(Cancel.class, WAIT).requestId());
    Generate dg = d.seen().expectMessageClass(Generate.class, WAIT);
    assertNull(dg.request().kvTransfer());
    decode(d, dg);
    assertDecodedByD(events.toCompletableFuture().join(), d, "slow");
    assertEquals(Set.of("m#0"), s.decoders.unacknowledged);
    assertEquals(List.of("failed m#0"), s.heard.events);
  }

  @Test
  void aClientThatLeavesCancelsThePrefillLeg() {
    Split s = new Split();
    Replica d = s.decoder("m#1");
    s.run(request("gone"));
    Generate g = leg(s.p, "gone");
    s.client.shutdown();
    assertEquals("gone~prefill", s.p.seen().expectMessageClass(Cancel.class, WAIT).requestId());
    d.seen().expectNoMessage(Duration.ofMillis(200));
    assertEquals(0, s.leases.get());
    assertTrue(g.acknowledge());
  }

  @Test
  void aDecodeReplicaThatCannotPullServesTheRequestWhole() {
    Split s = new Split();
    Replica d = s.decoder("m#1");
    var events = s.run(request("pull"));
    prefilled(s.p, leg(s.p, "pull"));
    Generate first = d.seen().expectMessageClass(Generate.class, WAIT);
    assertEquals(HANDLE.toRemotePrefill(), first.request().kvTransfer());
    first
        .replyTo()
        .tell(
            new Failed(
                "pull", ErrorKind.INTERNAL, "the prefill node refused", "kv_transfer_params"));
    Generate again = d.seen().expectMessageClass(Generate.class, WAIT);
    assertEquals("pull~2", again.request().requestId());
    assertNull(again.request().kvTransfer(), "served whole");
    decode(d, again);
    assertDecodedByD(events.toCompletableFuture().join(), d, "pull");
    assertEquals(List.of("prefilled m#0", "pull failed m#0"), s.heard.events);
  }

  @Test
  void aDecodeReplicaLostAfterThePullMigratesWithoutTheHandle() {
    Split s = new Split();
    Replica d = s.decoder("m#1");
    Replica other = s.decoder("m#2");
    var events = s.run(request("moved"));
    prefilled(s.p, leg(s.p, "moved"));
    Generate first = d.seen().expectMessageClass(Generate.class, WAIT);
    first.replyTo().tell(new Accepted("moved", d.id(), d.ref()));
    first
        .replyTo()
        .tell(
            new GenerationUpdate(
                "moved",
                started(d),
                List.of(
                    new ChoiceUpdate(0, "a", List.of(7), null, null, null),
                    new ChoiceUpdate(1, "b", List.of(8), null, null, null)),
                null));
    testKit.stop(d.ref());
    Generate next = other.seen().expectMessageClass(Generate.class, WAIT);
    assertEquals("moved~2", next.request().requestId());
    assertNull(next.request().kvTransfer(), "a continuation recomputes");
    assertEquals(2, next.request().resume().choices().size());
    String id = next.request().requestId();
    next.replyTo().tell(new Accepted(id, other.id(), other.ref()));
    next.replyTo()
        .tell(
            new GenerationUpdate(
                id,
                started(other),
                List.of(
                    new ChoiceUpdate(0, "c", List.of(9), null, FinishReason.LENGTH, null),
                    new ChoiceUpdate(1, "d", List.of(10), null, FinishReason.LENGTH, null)),
                new Usage(5, 4, 0)));
    List<Integer> ids = new ArrayList<>();
    for (GenerationEvent e : events.toCompletableFuture().join())
      for (ChoiceUpdate c : ((GenerationUpdate) e).choices()) ids.addAll(c.tokenIds());
    assertEquals(List.of(7, 8, 9, 10), ids);
  }
}
