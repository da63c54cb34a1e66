package dev.troupe.training;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.testing.MapWeights;
import dev.troupe.engine.testing.TinyModels;
import dev.troupe.node.DataEntities;
import dev.troupe.persistence.Persistence;
import dev.troupe.persistence.PersistenceInit;
import dev.troupe.persistence.PersistenceSettings;
import dev.troupe.protocol.cluster.TrainableModelProtocol;
import dev.troupe.protocol.cluster.TrainingConfig;
import dev.troupe.protocol.cluster.TrainingJobProtocol;
import dev.troupe.training.nd4j.LoraSpec;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.sharding.ShardRegion.CurrentShardRegionState;
import org.apache.pekko.cluster.sharding.typed.GetShardRegionState;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Join;
import org.apache.pekko.cluster.typed.Leave;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two trainer nodes on one journal (an H2 file both JVM-local systems open): the node hosting a
 * running job leaves the cluster (a drain). The job comes back on the other node by itself —
 * sharding remembers it, nobody polls — trains its step there from the model's latest checkpoint,
 * and its stream goes on after the last step the first node reported: every step once, one
 * checkpoint.
 */
class TrainingHandOffTest {
  static final ModelConfig CONFIG = TinyModels.config(TinyModels.Arch.QWEN3);
  static final int ROWS = 300;

  @TempDir Path dir;
  final List<ActorSystem<Void>> systems = new ArrayList<>();
  final List<String> published = Collections.synchronizedList(new ArrayList<>());

  @AfterEach
  void stop() throws Exception {
    for (ActorSystem<Void> s : systems) {
      s.terminate();
      s.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
    }
  }

  ActorSystem<Void> node(String name, PersistenceSettings ps) {
    Config config =
        Persistence.configFor(ps)
            .withFallback(
                ConfigFactory.parseString(
                    """
                    pekko.actor.provider = cluster
                    pekko.remote.artery.canonical.hostname = 127.0.0.1
                    pekko.remote.artery.canonical.port = 0
                    pekko.cluster.roles = [trainer]
                    pekko.cluster.jmx.multi-mbeans-in-same-jvm = on
                    pekko.cluster.downing-provider-class = ""
                    pekko.coordinated-shutdown.exit-jvm = off
                    pekko.coordinated-shutdown.run-by-jvm-shutdown-hook = off
                    pekko.loglevel = WARNING
                    pekko.cluster.log-info = off
                    pekko.cluster.sharding.entity-restart-backoff = 500ms
                    pekko.cluster.sharding.retry-interval = 300ms
                    pekko.cluster.gossip-interval = 300ms
                    pekko.cluster.leader-actions-interval = 300ms
                    pekko.cluster.singleton.hand-over-retry-interval = 300ms
                    """))
            .withFallback(ConfigFactory.load());
    ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), "troupe", config);
    systems.add(system);
    MapWeights weights = new MapWeights(CONFIG, TinyModels.randomWeights(CONFIG, 3));
    DataEntities.init(system, ps);
    TrainingEntities.init(
        system,
        new TrainingSettings(
            dir.resolve("checkpoints"),
            new Trainer.Settings(
                64, new LoraSpec(4, 8, LoraSpec.ALL_TARGETS, false, 1), AdamW.Hyper.ART),
            Duration.ofSeconds(20),
            Duration.ofMinutes(1)),
        base ->
            new Trainers.BaseModels.Loaded(
                CONFIG, weights, new CharTokenizer(CONFIG.vocabSize()), new ChatMlTemplate()),
        (modelId, base, step, d, adapter) -> published.add(name + ":" + step));
    return system;
  }

  @Test
  void aRunningJobWhoseNodeLeavesResumesOnTheOtherNode() throws Exception {
    PersistenceSettings ps = PersistenceSettings.h2(dir.resolve("troupe"));
    PersistenceInit.ensureSchema(ps);
    ActorSystem<Void> a = node("a", ps);
    Cluster.get(a).manager().tell(Join.create(Cluster.get(a).selfMember().address()));
    ActorSystem<Void> b = node("b", ps);
    Cluster.get(b).manager().tell(Join.create(Cluster.get(a).selfMember().address()));
    awaitUp(a, 2);

    String modelId = UUID.randomUUID().toString();
    TestProbe<TrainableModelProtocol.ModelReply> created = TestProbe.create(a);
    ClusterSharding.get(a)
        .entityRefFor(TrainableModelProtocol.TYPE_KEY, modelId)
        .tell(
            new TrainableModelProtocol.Create(
                new TrainableModelProtocol.ModelInfo(modelId, "e", "p", "m", "tiny", null, 0),
                created.ref()));
    created.expectMessageClass(TrainableModelProtocol.ModelFound.class, Duration.ofSeconds(30));

    String jobId = UUID.randomUUID().toString();
    List<byte[]> groups = new ArrayList<>();
    for (int i = 0; i < ROWS / 2; i++)
      groups.add(TrainingFlowTest.group(30).getBytes(StandardCharsets.UTF_8));
    TestProbe<TrainingJobProtocol.SubmitReply> submitted = TestProbe.create(a);
    ClusterSharding.get(a)
        .entityRefFor(TrainingJobProtocol.TYPE_KEY, jobId)
        .tell(
            new TrainingJobProtocol.Submit(
                modelId,
                groups,
                TrainingConfig.resolve(
                    null, null, null, null, null, 0.01, null, null, null, null, null),
                submitted.ref()));
    submitted.expectMessage(Duration.ofSeconds(30), new TrainingJobProtocol.Submitted(jobId));

    // running, some steps reported: the job's node leaves (it hands its shards off)
    TrainingJobProtocol.JobView running = awaitView(a, jobId, v -> v.gradientSteps() >= 1);
    assertEquals(TrainingJobProtocol.Status.RUNNING, running.status());
    assertTrue(running.gradientSteps() < ROWS, "still running when its node leaves");
    ActorSystem<Void> host = hosts(a, jobId) ? a : b;
    ActorSystem<Void> other = host == a ? b : a;
    String otherName = other == a ? "a" : "b";
    Cluster.get(host).manager().tell(Leave.create(Cluster.get(host).selfMember().address()));
    host.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);

    TrainingJobProtocol.JobView done =
        awaitView(other, jobId, v -> v.status() == TrainingJobProtocol.Status.SUCCEEDED);
    assertEquals(1L, done.step());
    assertEquals(ROWS, done.gradientSteps());
    TestProbe<TrainingJobProtocol.JobReply> page = TestProbe.create(other);
    ClusterSharding.get(other)
        .entityRefFor(TrainingJobProtocol.TYPE_KEY, jobId)
        .tell(new TrainingJobProtocol.ListEvents(null, 1000, page.ref()));
    var events = ((TrainingJobProtocol.EventPage) page.receiveMessage()).data();
    assertEquals(ROWS + 2, events.size());
    assertEquals(1, events.stream().filter(e -> e.type().equals("training_started")).count());
    assertEquals("training_ended", events.get(events.size() - 1).type());
    assertEquals(List.of(otherName + ":1"), published, "trained and announced once, there");
  }

  static TrainingJobProtocol.JobView awaitView(
      ActorSystem<?> system,
      String jobId,
      java.util.function.Predicate<TrainingJobProtocol.JobView> p)
      throws InterruptedException {
    TestProbe<TrainingJobProtocol.JobReply> probe = TestProbe.create(system);
    TrainingJobProtocol.JobReply last = null;
    for (int i = 0; i < 1200; i++) {
      ClusterSharding.get(system)
          .entityRefFor(TrainingJobProtocol.TYPE_KEY, jobId)
          .tell(new TrainingJobProtocol.GetJob(probe.ref()));
      try {
        last = probe.receiveMessage(Duration.ofSeconds(2));
        if (last instanceof TrainingJobProtocol.JobView v && p.test(v)) return v;
      } catch (AssertionError timeout) {
        // the shard is moving: asked again
      }
      Thread.sleep(50);
    }
    throw new AssertionError("the job did not get there: " + last);
  }

  static boolean hosts(ActorSystem<?> system, String jobId) {
    TestProbe<CurrentShardRegionState> probe = TestProbe.create(system);
    ClusterSharding.get(system)
        .shardState()
        .tell(new GetShardRegionState(TrainingJobProtocol.TYPE_KEY, probe.getRef()));
    return probe.receiveMessage(Duration.ofSeconds(10)).getShards().stream()
        .anyMatch(s -> s.getEntityIds().contains(jobId));
  }

  static void awaitUp(ActorSystem<?> system, int members) throws InterruptedException {
    Cluster cluster = Cluster.get(system);
    for (int i = 0; i < 300; i++) {
      long up = 0;
      for (var m : cluster.state().getMembers()) if (m.status() == MemberStatus.up()) up++;
      if (up == members && cluster.state().getUnreachable().isEmpty()) return;
      Thread.sleep(100);
    }
    throw new AssertionError("cluster did not reach " + members + " members up");
  }
}
