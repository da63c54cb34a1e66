package dev.troupe.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import dev.troupe.engine.core.EngineSettings;
import dev.troupe.engine.serving.TestEngines;
import dev.troupe.node.NodeSettings;
import dev.troupe.protocol.cluster.GenerationRequest;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.*;
import dev.troupe.protocol.cluster.SamplingParams;
import dev.troupe.protocol.cluster.ServedModels;
import dev.troupe.protocol.cluster.ServedModels.ServedModel;
import dev.troupe.protocol.cluster.WorkerStatus;
import dev.troupe.scheduler.SchedulingPolicy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * The ModelWorker actor with probes, every message serialized (serialize-messages = on): requests
 * join a running batch, cancellation and vanished requesters free the KV cache, a full queue is an
 * overload reply.
 */
class ModelWorkerTest {
  private static final ActorTestKit testKit =
      ActorTestKit.create(
          // one input thread: requests are prepared (and admitted) in the order they arrive
          ConfigFactory.parseString(
                  "pekko.actor.serialize-messages = on\ntroupe.worker.input.threads = 1")
              .withFallback(ConfigFactory.load()));
  private static final ServedModels MODELS =
      new ServedModels(List.of(new ServedModel("demo", "demo", 1, "fcfs")));
  private static final Duration WAIT = Duration.ofSeconds(60);

  @AfterAll
  static void stop() {
    testKit.shutdownTestKit();
  }

  private static ActorRef<Command> spawn(EngineSettings settings) {
    EngineProvider engines = (model, replica) -> TestEngines.demo(settings, SchedulingPolicy.FCFS);
    return testKit.spawn(
        ModelWorker.create("demo#0", MODELS, engines, Duration.ZERO),
        DispatcherSelector.fromConfig(NodeSettings.WORKER_DISPATCHER));
  }

  static GenerationRequest request(String id, int maxTokens) {
    SamplingParams p =
        SamplingParams.builder().temperature(0.0).maxTokens(maxTokens).ignoreEos(true).build();
    return GenerationRequest.prompt(id, "Once upon a time", p).toBuilder()
        .returnTokenIds(true)
        .build();
  }

  /** Receives events until the request's last update or Failed; returns them all. */
  static List<GenerationEvent> untilCompleted(TestProbe<GenerationEvent> probe) {
    List<GenerationEvent> events = new ArrayList<>();
    while (true) {
      GenerationEvent e = probe.receiveMessage(WAIT);
      events.add(e);
      if (e instanceof Failed || ((GenerationUpdate) e).done()) return events;
    }
  }

  static Usage usage(List<GenerationEvent> events) {
    return ((GenerationUpdate) events.get(events.size() - 1)).usage();
  }

  private static WorkerStatus status(ActorRef<Command> worker) {
    TestProbe<WorkerStatus> probe = testKit.createTestProbe();
    worker.tell(new GetStatus(probe.ref()));
    return probe.receiveMessage(WAIT);
  }

  @Test
  void aRequestJoinsWhileAnotherIsRunning() {
    ActorRef<Command> worker = spawn(EngineSettings.small());
    TestProbe<GenerationEvent> a = testKit.createTestProbe();
    TestProbe<GenerationEvent> b = testKit.createTestProbe();
    worker.tell(new Generate(request("a", 40), a.ref()));
    GenerationUpdate first = assertInstanceOf(GenerationUpdate.class, a.receiveMessage(WAIT));
    assertEquals("demo#0", first.started().servedBy(), "the first update names the replica");
    assertEquals(4, first.started().promptTokenIds().size(), "return_token_ids asked for them");
    assertEquals(1, first.choices().get(0).tokenIds().size(), "and carries the first token");
    worker.tell(new Generate(request("b", 5), b.ref()));
    List<GenerationEvent> bEvents = untilCompleted(b);
    assertEquals(5, bEvents.size(), "one update per step: " + bEvents);
    assertEquals(new Usage(4, 5, 0), usage(bEvents), bEvents.toString());
    // b joined and left while a kept decoding: a still has many updates to deliver.
    List<GenerationEvent> aRest = untilCompleted(a);
    assertTrue(aRest.size() > 5, "a kept decoding after b joined and left: " + aRest.size());
    Usage aUsage = usage(aRest);
    assertEquals(40, aUsage.completionTokens());
    // The token counters behind GET /metrics: each prompt once, every generated token.
    WorkerStatus s = status(worker);
    assertEquals(aUsage.promptTokens() + 4, s.promptTokens());
    assertEquals(45, s.generationTokens());
    testKit.stop(worker);
  }

  @Test
  void aHandedOffReplicaAcknowledgesThenHandsItsRequestsBackToMigrate() {
    ActorRef<Command> worker = spawn(EngineSettings.small().withNumBlocks(48));
    TestProbe<GenerationEvent> a = testKit.createTestProbe();
    worker.tell(new Generate(request("a", 300), a.ref(), true));
    Accepted accepted = assertInstanceOf(Accepted.class, a.receiveMessage(WAIT));
    assertEquals("demo#0", accepted.servedBy());
    assertEquals(worker, accepted.worker(), "who to watch");
    GenerationUpdate first = assertInstanceOf(GenerationUpdate.class, a.receiveMessage(WAIT));
    assertEquals(worker, first.started().worker());
    // Sharding's stop message when the shard moves: the request is handed back, not aborted.
    worker.tell(HandOff.INSTANCE);
    GenerationEvent e = a.receiveMessage(WAIT);
    while (e instanceof GenerationUpdate u) {
      assertTrue(u.choices().isEmpty() || u.choices().get(0).finishReason() == null, "not ended");
      e = a.receiveMessage(WAIT);
    }
    Migrate migrate = assertInstanceOf(Migrate.class, e);
    assertEquals("a", migrate.requestId());
    TestProbe<Object> watcher = testKit.createTestProbe();
    watcher.expectTerminated(worker, WAIT);
    a.expectNoMessage(Duration.ofMillis(200));
  }

  @Test
  void aDrainingReplicaFinishesWhatRunsTurnsNewRequestsAwayAndSaysWhenIdle() {
    ActorRef<Command> worker = spawn(EngineSettings.small().withNumBlocks(48));
    WorkerHealth health = WorkerHealth.get(testKit.system());
    TestProbe<GenerationEvent> a = testKit.createTestProbe();
    worker.tell(new Generate(request("a", 30), a.ref(), true));
    assertInstanceOf(Accepted.class, a.receiveMessage(WAIT));
    assertInstanceOf(GenerationUpdate.class, a.receiveMessage(WAIT));
    assertEquals(WorkerHealth.State.SERVING, health.hosted().get("demo#0").state());
    TestProbe<Drain.Drained> drained = testKit.createTestProbe();
    worker.tell(new Drain(drained.ref()));
    // A new request is not accepted: it moves to another replica at once.
    TestProbe<GenerationEvent> b = testKit.createTestProbe();
    worker.tell(new Generate(request("b", 5), b.ref(), true));
    Migrate turnedAway = assertInstanceOf(Migrate.class, b.receiveMessage(WAIT));
    assertTrue(turnedAway.reason().contains("draining"), turnedAway.reason());
    // The running one finishes on this replica, then the replica says it is idle.
    List<GenerationEvent> rest = untilCompleted(a);
    assertEquals(30, usage(rest).completionTokens(), "finished, not cut");
    assertEquals("demo#0", drained.receiveMessage(WAIT).entityId());
    // Unanswered status asks keep gateways from sending it more work.
    TestProbe<WorkerStatus> probe = testKit.createTestProbe();
    worker.tell(new GetStatus(probe.ref()));
    probe.expectNoMessage(Duration.ofMillis(300));
    testKit.stop(worker);
  }

  @Test
  void cancelFreesTheCacheWithinAStep() {
    ActorRef<Command> worker = spawn(EngineSettings.small().withNumBlocks(48));
    TestProbe<GenerationEvent> a = testKit.createTestProbe();
    worker.tell(new Generate(request("a", 300), a.ref()));
    assertInstanceOf(GenerationUpdate.class, a.receiveMessage(WAIT));
    assertInstanceOf(GenerationUpdate.class, a.receiveMessage(WAIT));
    worker.tell(new Cancel("a"));
    List<GenerationEvent> rest = untilCompleted(a);
    GenerationUpdate last = (GenerationUpdate) rest.get(rest.size() - 1);
    assertEquals(FinishReason.ABORT, last.choices().get(0).finishReason());
    // GetStatus is handled after the Cancel: the blocks are already free.
    WorkerStatus s = status(worker);
    assertEquals(0, s.kvBlocksUsed());
    assertEquals(0, s.running());
    testKit.stop(worker);
  }

  @Test
  void aRequesterThatGoesAwayIsCancelled() {
    ActorRef<Command> worker = spawn(EngineSettings.small().withNumBlocks(40));
    TestProbe<GenerationEvent> a = testKit.createTestProbe();
    worker.tell(new Generate(request("a", 300), a.ref()));
    assertInstanceOf(GenerationUpdate.class, a.receiveMessage(WAIT));
    a.stop();
    TestProbe<Object> probe = testKit.createTestProbe();
    probe.awaitAssert(
        WAIT,
        () -> {
          WorkerStatus s = status(worker);
          assertEquals(0, s.running());
          assertEquals(0, s.kvBlocksUsed());
          return null;
        });
    testKit.stop(worker);
  }

  @Test
  void aFullQueueIsAnOverloadReply() {
    // One running sequence at most, one waiting request at most.
    EngineSettings settings =
        EngineSettings.small().withMaxNumSeqs(1).withMaxWaiting(1).withNumBlocks(32);
    ActorRef<Command> worker = spawn(settings);
    TestProbe<GenerationEvent> a = testKit.createTestProbe();
    TestProbe<GenerationEvent> b = testKit.createTestProbe();
    TestProbe<GenerationEvent> c = testKit.createTestProbe();
    worker.tell(new Generate(request("a", 60), a.ref()));
    assertInstanceOf(GenerationUpdate.class, a.receiveMessage(WAIT));
    worker.tell(new Generate(request("b", 2), b.ref()));
    worker.tell(new Generate(request("c", 2), c.ref()));
    Failed f = assertInstanceOf(Failed.class, c.receiveMessage(WAIT));
    assertEquals(ErrorKind.OVERLOADED, f.kind());
    // b waits its turn and runs once a is done.
    assertEquals(60, usage(untilCompleted(a)).completionTokens());
    assertEquals(2, usage(untilCompleted(b)).completionTokens());
    testKit.stop(worker);
  }

  @Test
  void tokenizesDetokenizesAndReportsStatus() {
    ActorRef<Command> worker = spawn(EngineSettings.small().withNumBlocks(24));
    TestProbe<TokenizeReply> t = testKit.createTestProbe();
    worker.tell(
        new Tokenize(null, "Hello world", null, false, false, false, null, null, true, t.ref()));
    Tokenized tokenized = assertInstanceOf(Tokenized.class, t.receiveMessage(WAIT));
    assertEquals(tokenized.count(), tokenized.tokenStrs().size());
    TestProbe<DetokenizeReply> d = testKit.createTestProbe();
    worker.tell(new Detokenize(tokenized.tokens(), d.ref()));
    assertEquals(new Detokenized("Hello world"), d.receiveMessage(WAIT));
    WorkerStatus s = status(worker);
    assertEquals("demo#0", s.entityId());
    assertEquals(24, s.kvBlocksTotal());
    assertEquals("fcfs", s.schedulingPolicy());
    testKit.stop(worker);
  }

  @Test
  void oneRequestsFaultsNeverTouchTheOthersNorTheWorker() {
    ActorRef<Command> worker = spawn(EngineSettings.small().withNumBlocks(20));
    TestProbe<GenerationEvent> good = testKit.createTestProbe();
    worker.tell(new Generate(request("good", 30), good.ref()));
    assertInstanceOf(GenerationUpdate.class, good.receiveMessage(WAIT));
    // A padded-vocabulary id (151,700 of the demo model's 151,936 rows; its tokenizer has
    // 151,669) sampled with logprobs: it decodes to "", as in vLLM.
    TestProbe<GenerationEvent> pad = testKit.createTestProbe();
    GenerationRequest padded = request("pad", 3);
    worker.tell(
        new Generate(
            padded.withSampling(
                padded.sampling().toBuilder()
                    .allowedTokenIds(List.of(151_700))
                    .logprobs(2)
                    .build()),
            pad.ref()));
    List<GenerationEvent> padEvents = untilCompleted(pad);
    assertEquals(3, usage(padEvents).completionTokens(), padEvents.toString());
    GenerationUpdate firstPad = (GenerationUpdate) padEvents.get(0);
    assertEquals("", firstPad.choices().get(0).logprobs().get(0).chosen().token());
    // Template bombs, through chat and through /tokenize: the request's own 400.
    String bomb = "{{ " + "(".repeat(20_000) + "1" + ")".repeat(20_000) + " }}";
    TestProbe<GenerationEvent> t = testKit.createTestProbe();
    worker.tell(
        new Generate(
            GenerationRequest.chat(
                    "bomb",
                    List.of(java.util.Map.of("role", "user", "content", "x")),
                    request("bomb", 2).sampling())
                .toBuilder()
                .chatTemplate(bomb)
                .build(),
            t.ref()));
    Failed f = assertInstanceOf(Failed.class, t.receiveMessage(WAIT));
    assertEquals(ErrorKind.BAD_REQUEST, f.kind());
    assertEquals("chat_template", f.param());
    TestProbe<TokenizeReply> tok = testKit.createTestProbe();
    worker.tell(
        new Tokenize(
            List.of(java.util.Map.of("role", "user", "content", "x")),
            null,
            null,
            true,
            false,
            false,
            bomb,
            null,
            false,
            tok.ref()));
    assertEquals(
        "chat_template", assertInstanceOf(Rejected.class, tok.receiveMessage(WAIT)).param());
    // The running request went on undisturbed: no restart, no failure.
    List<GenerationEvent> rest = untilCompleted(good);
    assertEquals(30, usage(rest).completionTokens(), rest.toString());
    testKit.stop(worker);
  }

  @Test
  void anUnknownModelRefusesRequests() {
    EngineProvider engines =
        (model, replica) -> {
          throw new AssertionError("not loaded");
        };
    ActorRef<Command> worker =
        testKit.spawn(ModelWorker.create("nope#0", MODELS, engines, Duration.ZERO));
    TestProbe<GenerationEvent> a = testKit.createTestProbe();
    worker.tell(new Generate(request("a", 2), a.ref()));
    Failed f = assertInstanceOf(Failed.class, a.receiveMessage(WAIT));
    assertEquals(ErrorKind.NOT_FOUND, f.kind());
    testKit.stop(worker);
  }
}
