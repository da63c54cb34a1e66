package dev.troupe.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import dev.troupe.engine.core.EngineSettings;
import dev.troupe.engine.serving.TestEngines;
import dev.troupe.node.NodeSettings;
import dev.troupe.protocol.cluster.GenerationRequest;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Command;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Generate;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationEvent;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationUpdate;
import dev.troupe.protocol.cluster.SamplingParams;
import dev.troupe.protocol.cluster.ServedModels;
import dev.troupe.protocol.cluster.ServedModels.ServedModel;
import dev.troupe.protocol.kv.BlockHash;
import dev.troupe.protocol.kv.BlockHasher;
import dev.troupe.protocol.kv.CacheReports;
import dev.troupe.protocol.kv.CacheReports.CacheReport;
import dev.troupe.protocol.kv.CacheReports.SnapshotRequest;
import dev.troupe.scheduler.SchedulingPolicy;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.apache.pekko.actor.typed.pubsub.Topic;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * A worker publishes the block hashes its prefix cache holds, as a gateway computes them from the
 * prompt's token ids (messages serialized: serialize-messages = on).
 */
class ModelWorkerCacheReportTest {
  private static final ActorTestKit testKit =
      ActorTestKit.create(
          ConfigFactory.parseString(
                  "pekko.actor.serialize-messages = on\n"
                      + "troupe.worker.cache-report-interval = 50ms\n"
                      + "troupe.worker.cache-report-heartbeat = 300ms")
              .withFallback(ConfigFactory.load()));
  private static final Duration WAIT = Duration.ofSeconds(60);

  @AfterAll
  static void stop() {
    testKit.shutdownTestKit();
  }

  @Test
  void aReplicaThatHasServedNothingReportsItsLoadAndRole() {
    // A prefill-only replica gets no request until a gateway knows its role: it must report
    // without having run a step (before, an idle replica published nothing until its first step).
    ActorTestKit kit =
        ActorTestKit.create(
            ConfigFactory.parseString(
                    "troupe.worker.kv-role.models = [{model = idle, role = prefill}]")
                .withFallback(testKit.system().settings().config()));
    try {
      TestProbe<CacheReport> gateway = kit.createTestProbe();
      ActorRef<Topic.Command<CacheReport>> reports =
          kit.spawn(Topic.create(CacheReport.class, CacheReports.reportTopic("idle")));
      reports.tell(Topic.subscribe(gateway.getRef()));
      EngineProvider engines =
          (model, replica) -> TestEngines.demo(EngineSettings.small(), SchedulingPolicy.FCFS);
      kit.spawn(
          ModelWorker.create(
              "idle#0",
              new ServedModels(List.of(new ServedModel("idle", "demo", 1, "fcfs"))),
              engines,
              Duration.ZERO),
          DispatcherSelector.fromConfig(NodeSettings.WORKER_DISPATCHER));
      CacheReport r = gateway.receiveMessage(WAIT);
      assertEquals("idle#0", r.replica());
      assertEquals(dev.troupe.protocol.cluster.KvRole.PREFILL, r.kvRole());
      assertEquals(0, r.load().running());
      assertTrue(r.load().kvBlocksTotal() > 0);
    } finally {
      kit.shutdownTestKit();
    }
  }

  @Test
  void publishesTheHashesOfItsComputedBlocksAndAnswersSnapshotRequests() {
    TestProbe<CacheReport> gateway = testKit.createTestProbe();
    ActorRef<Topic.Command<CacheReport>> reports =
        testKit.spawn(Topic.create(CacheReport.class, CacheReports.reportTopic("cached")));
    reports.tell(Topic.subscribe(gateway.getRef()));
    ActorRef<Topic.Command<SnapshotRequest>> requests =
        testKit.spawn(Topic.create(SnapshotRequest.class, CacheReports.requestTopic("cached")));
    EngineProvider engines =
        (model, replica) -> TestEngines.demo(EngineSettings.small(), SchedulingPolicy.FCFS);
    ActorRef<Command> worker =
        testKit.spawn(
            ModelWorker.create(
                "cached#1",
                new ServedModels(List.of(new ServedModel("cached", "demo", 2, "fcfs"))),
                engines,
                Duration.ZERO),
            DispatcherSelector.fromConfig(NodeSettings.WORKER_DISPATCHER));
    // The reporter beats while idle once the engine ran: wait for the subscription to spread.
    String text =
        "A prompt that spans a few blocks of sixteen tokens, for the cache to keep them. "
            .repeat(3);
    SamplingParams p =
        SamplingParams.builder().temperature(0.0).maxTokens(3).ignoreEos(true).build();
    TestProbe<GenerationEvent> client = testKit.createTestProbe();
    worker.tell(
        new Generate(
            GenerationRequest.prompt("r1", text, p).toBuilder().returnTokenIds(true).build(),
            client.ref()));
    GenerationUpdate first = (GenerationUpdate) client.receiveMessage(WAIT);
    int[] ids = first.started().promptTokenIds().stream().mapToInt(Integer::intValue).toArray();
    List<BlockHash> chain = new BlockHasher().chain(ids, 16, null, null);
    assertTrue(chain.size() >= 2, "the prompt fills blocks");
    // Reports lost before the subscription spread are recovered by asking for a snapshot.
    Set<BlockHash> known = new HashSet<>();
    CacheReport last =
        gateway.awaitAssert(
            WAIT,
            () -> {
              requests.tell(Topic.publish(new SnapshotRequest("cached#1")));
              CacheReport r = gateway.receiveMessage(Duration.ofSeconds(1));
              if (r.replace()) known.clear();
              known.addAll(r.storedHashes());
              r.removedHashes().forEach(known::remove);
              assertTrue(known.containsAll(chain), "the prompt's full blocks are published");
              return r;
            });
    assertEquals("cached#1", last.replica());
    assertEquals(16, last.blockSize());
    assertTrue(last.load().kvBlocksTotal() > 0);
    testKit.stop(worker);
  }
}
