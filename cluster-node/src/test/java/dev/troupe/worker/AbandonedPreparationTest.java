package dev.troupe.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import dev.troupe.engine.core.EngineSettings;
import dev.troupe.engine.serving.TestEngines;
import dev.troupe.engine.spi.LogitsProcessor;
import dev.troupe.node.NodeSettings;
import dev.troupe.protocol.cluster.GenerationRequest;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Cancel;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Command;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Failed;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Generate;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationEvent;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationUpdate;
import dev.troupe.protocol.cluster.SamplingParams;
import dev.troupe.protocol.cluster.SamplingParams.LogitsProcessorSpec;
import dev.troupe.protocol.cluster.ServedModels;
import dev.troupe.protocol.cluster.ServedModels.ServedModel;
import dev.troupe.scheduler.SchedulingPolicy;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * A request whose client went away stops costing the replica while it is still being prepared
 * (issue 21: three abandoned heavy requests kept a replica's input threads busy, and a normal chat
 * behind them waited 76 s). With one input thread: a cancelled request's preparation is
 * interrupted, a queued one never runs, and the request behind them is served.
 */
class AbandonedPreparationTest {
  private static final ActorTestKit testKit =
      ActorTestKit.create(
          ConfigFactory.parseString(
                  "pekko.actor.serialize-messages = on\ntroupe.worker.input.threads = 1")
              .withFallback(ConfigFactory.load()));
  private static final Duration WAIT = Duration.ofSeconds(60);

  /**
   * Stands in for slow request-supplied work in the input processor (a custom logits processor is
   * constructed there): its constructor blocks until its thread is interrupted, or 10 minutes.
   */
  public static final class BlocksUntilInterrupted implements LogitsProcessor {
    static final AtomicInteger constructed = new AtomicInteger();
    static volatile CountDownLatch started = new CountDownLatch(1);
    static volatile CountDownLatch interrupted = new CountDownLatch(1);

    public BlocksUntilInterrupted(LogitsProcessor.Init init) {
      constructed.incrementAndGet();
      started.countDown();
      try {
        Thread.sleep(600_000);
      } catch (InterruptedException e) {
        interrupted.countDown();
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted");
      }
    }

    @Override
    public void apply(Context context, float[] logits) {}

    static void reset() {
      constructed.set(0);
      started = new CountDownLatch(1);
      interrupted = new CountDownLatch(1);
    }
  }

  @AfterAll
  static void stop() {
    testKit.shutdownTestKit();
  }

  private static ActorRef<Command> spawn() {
    EngineSettings settings =
        new EngineSettings(
            16,
            64,
            0,
            8,
            256,
            16,
            true,
            100,
            true,
            List.of(BlocksUntilInterrupted.class.getName()));
    ServedModels models = new ServedModels(List.of(new ServedModel("demo", "demo", 1, "fcfs")));
    EngineProvider engines = (model, replica) -> TestEngines.demo(settings, SchedulingPolicy.FCFS);
    return testKit.spawn(
        ModelWorker.create("demo#0", models, engines, Duration.ZERO),
        DispatcherSelector.fromConfig(NodeSettings.WORKER_DISPATCHER));
  }

  private static GenerationRequest slow(String id) {
    SamplingParams p =
        SamplingParams.builder()
            .temperature(0.0)
            .maxTokens(4)
            .logitsProcessors(
                List.of(
                    new LogitsProcessorSpec(
                        BlocksUntilInterrupted.class.getName(), List.of(), Map.of())))
            .build();
    return GenerationRequest.prompt(id, "Once upon a time", p);
  }

  private static void await(CountDownLatch latch, String what) throws InterruptedException {
    assertTrue(latch.await(WAIT.toSeconds(), TimeUnit.SECONDS), what);
  }

  /** A normal request after the abandoned ones is served: it was not stuck behind them. */
  private static void assertServed(ActorRef<Command> worker, String id) {
    TestProbe<GenerationEvent> probe = testKit.createTestProbe();
    worker.tell(new Generate(ModelWorkerTest.request(id, 3), probe.ref()));
    List<GenerationEvent> events = ModelWorkerTest.untilCompleted(probe);
    GenerationUpdate last = assertInstanceOf(GenerationUpdate.class, events.get(events.size() - 1));
    assertEquals(3, last.usage().completionTokens());
  }

  @Test
  void aCancelledRequestsPreparationIsInterruptedAndAQueuedOneNeverRuns() throws Exception {
    BlocksUntilInterrupted.reset();
    ActorRef<Command> worker = spawn();
    TestProbe<GenerationEvent> a = testKit.createTestProbe();
    TestProbe<GenerationEvent> queued = testKit.createTestProbe();
    worker.tell(new Generate(slow("a"), a.ref()));
    await(BlocksUntilInterrupted.started, "a's preparation started");
    worker.tell(new Generate(slow("queued"), queued.ref())); // behind a on the one input thread
    worker.tell(new Cancel("queued"));
    assertInstanceOf(Failed.class, queued.receiveMessage(WAIT));
    worker.tell(new Cancel("a"));
    assertInstanceOf(Failed.class, a.receiveMessage(WAIT));
    await(BlocksUntilInterrupted.interrupted, "a's preparation was interrupted");
    assertServed(worker, "after-cancel");
    assertEquals(1, BlocksUntilInterrupted.constructed.get(), "the queued one never ran");
    testKit.stop(worker);
  }

  @Test
  void aRequesterThatStopsHasItsPreparationInterrupted() throws Exception {
    BlocksUntilInterrupted.reset();
    ActorRef<Command> worker = spawn();
    TestProbe<GenerationEvent> gone = testKit.createTestProbe();
    worker.tell(new Generate(slow("gone"), gone.ref()));
    await(BlocksUntilInterrupted.started, "its preparation started");
    gone.stop(); // the gateway's owner of the request stops when its client leaves
    await(BlocksUntilInterrupted.interrupted, "its preparation was interrupted");
    assertServed(worker, "after-gone");
    testKit.stop(worker);
  }
}
