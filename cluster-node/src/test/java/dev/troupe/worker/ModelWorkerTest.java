package dev.troupe.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import dev.troupe.engine.core.EngineSettings;
import dev.troupe.engine.core.TestEngines;
import dev.troupe.node.NodeSettings;
import dev.troupe.protocol.cluster.GenerationRequest;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.*;
import dev.troupe.protocol.cluster.SamplingParams;
import dev.troupe.protocol.cluster.ServedModels;
import dev.troupe.protocol.cluster.ServedModels.ServedModel;
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
          ConfigFactory.parseString("pekko.actor.serialize-messages = on")
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

  /** Receives events until the request's Completed or Failed; returns them all. */
  static List<GenerationEvent> untilCompleted(TestProbe<GenerationEvent> probe) {
    List<GenerationEvent> events = new ArrayList<>();
    while (true) {
      GenerationEvent e = probe.receiveMessage(WAIT);
      events.add(e);
      if (e instanceof Completed || e instanceof Failed) return events;
    }
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
    assertInstanceOf(Started.class, a.receiveMessage(WAIT));
    assertInstanceOf(TokenDelta.class, a.receiveMessage(WAIT));
    worker.tell(new Generate(request("b", 5), b.ref()));
    List<GenerationEvent> bEvents = untilCompleted(b);
    assertInstanceOf(Started.class, bEvents.get(0));
    assertEquals(
        new Usage(4, 5, 0),
        ((Completed) bEvents.get(bEvents.size() - 1)).usage(),
        bEvents.toString());
    // b joined and left while a kept decoding: a still has many deltas to deliver.
    List<GenerationEvent> aRest = untilCompleted(a);
    long aDeltasAfterB = aRest.stream().filter(e -> e instanceof TokenDelta).count();
    assertTrue(aDeltasAfterB > 5, "a kept decoding after b joined and left: " + aDeltasAfterB);
    Usage aUsage = ((Completed) aRest.get(aRest.size() - 1)).usage();
    assertEquals(40, aUsage.completionTokens());
    // The token counters behind GET /metrics: each prompt once, every generated token.
    WorkerStatus s = status(worker);
    assertEquals(aUsage.promptTokens() + 4, s.promptTokens());
    assertEquals(45, s.generationTokens());
    testKit.stop(worker);
  }

  @Test
  void cancelFreesTheCacheWithinAStep() {
    ActorRef<Command> worker = spawn(EngineSettings.small().withNumBlocks(48));
    TestProbe<GenerationEvent> a = testKit.createTestProbe();
    worker.tell(new Generate(request("a", 300), a.ref()));
    assertInstanceOf(Started.class, a.receiveMessage(WAIT));
    assertInstanceOf(TokenDelta.class, a.receiveMessage(WAIT));
    worker.tell(new Cancel("a"));
    List<GenerationEvent> rest = untilCompleted(a);
    assertTrue(
        rest.stream()
            .anyMatch(
                e -> e instanceof ChoiceFinished f && f.finishReason() == FinishReason.ABORT));
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
    assertInstanceOf(Started.class, a.receiveMessage(WAIT));
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
    assertInstanceOf(Started.class, a.receiveMessage(WAIT));
    worker.tell(new Generate(request("b", 2), b.ref()));
    worker.tell(new Generate(request("c", 2), c.ref()));
    Failed f = assertInstanceOf(Failed.class, c.receiveMessage(WAIT));
    assertEquals(ErrorKind.OVERLOADED, f.kind());
    // b waits its turn and runs once a is done.
    List<GenerationEvent> aEvents = untilCompleted(a);
    assertInstanceOf(Completed.class, aEvents.get(aEvents.size() - 1));
    List<GenerationEvent> bEvents = untilCompleted(b);
    assertInstanceOf(Completed.class, bEvents.get(bEvents.size() - 1));
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
