package dev.troupe.trajectory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import dev.troupe.persistence.PersistenceSettings;
import dev.troupe.protocol.cluster.TrajectoryLogProtocol.Append;
import dev.troupe.protocol.cluster.TrajectoryLogProtocol.AppendFailed;
import dev.troupe.protocol.cluster.TrajectoryLogProtocol.AppendRejected;
import dev.troupe.protocol.cluster.TrajectoryLogProtocol.AppendReply;
import dev.troupe.protocol.cluster.TrajectoryLogProtocol.Appended;
import dev.troupe.protocol.cluster.TrajectoryLogProtocol.Command;
import dev.troupe.protocol.cluster.TrajectoryLogProtocol.ReadPage;
import dev.troupe.protocol.cluster.TrajectoryLogProtocol.SplitStats;
import dev.troupe.protocol.cluster.TrajectoryLogProtocol.StoredGroup;
import dev.troupe.protocol.cluster.TrajectoryLogProtocol.TrajectoryPage;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.persistence.testkit.javadsl.EventSourcedBehaviorTestKit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * The TrajectoryLog entity on the event-sourced testkit with an in-memory store: durable-first
 * ordering, idempotency keys, orphan rows of an unacknowledged write, metrics, recovery.
 */
class TrajectoryLogTest {
  static final ActorTestKit testKit =
      ActorTestKit.create(
          EventSourcedBehaviorTestKit.config()
              .withFallback(ConfigFactory.parseString("pekko.loglevel = WARNING"))
              .withFallback(ConfigFactory.load()));
  static final String MODEL = "3f1c2b9a-1111-4222-8333-944455556666";

  @AfterAll
  static void tearDown() {
    testKit.shutdownTestKit();
  }

  /** A store in memory; {@code fail} makes the next write throw. */
  static final class MemoryStore implements TrajectoryStore {
    final List<StoredGroup> rows = new CopyOnWriteArrayList<>();
    final List<Integer> writes = new CopyOnWriteArrayList<>();
    volatile boolean fail;
    volatile java.util.concurrent.CountDownLatch gate = new java.util.concurrent.CountDownLatch(0);

    @Override
    public void write(String modelId, long firstSeq, List<Rows> batch) {
      try {
        gate.await();
      } catch (InterruptedException e) {
        throw new IllegalStateException(e);
      }
      if (fail) throw new IllegalStateException("disk on fire");
      writes.add(batch.size());
      rows.removeIf(g -> g.seq() >= firstSeq);
      long seq = firstSeq;
      for (Rows r : batch) {
        for (byte[] g : r.groups()) rows.add(new StoredGroup(seq++, r.split(), r.step(), 0, g));
      }
    }

    @Override
    public Page read(
        String modelId, String split, long afterSeq, long committedEnd, int limit, long maxBytes) {
      List<StoredGroup> out = new ArrayList<>();
      boolean more = false;
      for (StoredGroup g : rows) {
        if (g.seq() <= afterSeq
            || g.seq() >= committedEnd
            || (split != null && !split.equals(g.split()))) continue;
        if (out.size() == limit) {
          more = true;
          break;
        }
        out.add(g);
      }
      return new Page(out, more);
    }

    @Override
    public long deleteModel(String modelId) {
      long n = rows.size();
      rows.clear();
      return n;
    }

    @Override
    public void close() {}
  }

  record Recorded(long step, Map<String, Double> metrics) {}

  final MemoryStore store = new MemoryStore();
  final List<Recorded> recorded = new CopyOnWriteArrayList<>();
  final EventSourcedBehaviorTestKit<Command, TrajectoryLog.Event, TrajectoryLog.State> kit =
      EventSourcedBehaviorTestKit.create(
          testKit.system(),
          TrajectoryLog.create(
              MODEL,
              store,
              (id, step, metrics) -> {
                recorded.add(new Recorded(step, metrics));
                return CompletableFuture.completedFuture(null);
              },
              PersistenceSettings.h2(Path.of("x")).withSnapshotEvery(2)));

  static byte[] json(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /** Appends are answered after the metrics round trip, so use a probe rather than runCommand. */
  AppendReply append(String split, long step, List<byte[]> groups, SplitStats stats, String key) {
    TestProbe<AppendReply> probe = testKit.createTestProbe();
    ActorRef<AppendReply> ref = probe.getRef();
    kit.runCommand(new Append(split, step, groups, stats, key, ref));
    return probe.receiveMessage(Duration.ofSeconds(5));
  }

  @Test
  void appendsAreStoredThenCommittedAndMetricsGoToTheCheckpoint() {
    SplitStats g1 =
        SplitStats.ofGroup(new double[] {1, 3}, List.of(Map.of("acc", 1.0), Map.of("acc", 0.0)));
    SplitStats g2 = SplitStats.ofGroup(new double[] {2}, List.of(Map.of()));
    Appended a =
        (Appended)
            append("val", 4, List.of(json("{\"a\":1}"), json("{\"b\":2}")), g1.plus(g2), null);
    assertEquals(0, a.firstSeq());
    assertEquals(2, a.groups());
    assertEquals(3, a.trajectories());
    assertEquals(2.0, a.metrics().get("val/reward"));
    assertEquals(1.0, a.metrics().get("val/reward_std_dev"));
    assertEquals(0.5, a.metrics().get("val/acc"));
    assertEquals(List.of(new Recorded(4, a.metrics())), recorded);
    assertEquals(2, store.rows.size());
    assertEquals(2, kit.getState().nextSeq());
  }

  @Test
  void aRepeatedIdempotencyKeyStoresNothingAndSurvivesRecovery() {
    SplitStats s = SplitStats.ofGroup(new double[] {1}, List.of(Map.of()));
    Appended first = (Appended) append("train", 0, List.of(json("{}")), s, "k1");
    kit.restart();
    Appended again = (Appended) append("train", 0, List.of(json("{}")), s, "k1");
    assertTrue(again.duplicate());
    assertFalse(first.duplicate());
    assertEquals(first.firstSeq(), again.firstSeq());
    assertEquals(1, store.rows.size());
    assertEquals(1, kit.getState().nextSeq());
  }

  @Test
  void aFailedWriteIsNotAcknowledgedAndItsRowsAreReplaced() {
    SplitStats s = SplitStats.ofGroup(new double[] {1}, List.of(Map.of()));
    append("val", 0, List.of(json("{\"n\":0}")), s, null);
    // Rows written by a write whose event never made it (a crash in between) are invisible...
    store.rows.add(new StoredGroup(1, "val", 0, 0, json("{\"orphan\":true}")));
    TrajectoryPage visible =
        kit.<TrajectoryPage>runCommand(r -> new ReadPage(null, -1, 10, 1 << 20, r)).reply();
    assertEquals(1, visible.data().size());
    // ...and replaced by the next write at the same sequence number.
    store.fail = true;
    assertInstanceOf(AppendFailed.class, append("val", 0, List.of(json("{\"n\":1}")), s, "kf"));
    store.fail = false;
    append("val", 0, List.of(json("{\"n\":1}")), s, "kf");
    TrajectoryPage page =
        kit.<TrajectoryPage>runCommand(r -> new ReadPage("val", -1, 10, 1 << 20, r)).reply();
    assertEquals(
        List.of("{\"n\":0}", "{\"n\":1}"),
        page.data().stream().map(g -> new String(g.json(), StandardCharsets.UTF_8)).toList());
  }

  @Test
  void recoveryRestoresSequenceAndSplitStatistics() {
    for (int i = 0; i < 5; i++) {
      append(
          "val",
          1,
          List.of(json("{\"i\":" + i + "}")),
          SplitStats.ofGroup(new double[] {i}, List.of(Map.of())),
          "key" + i);
    }
    TrajectoryLog.State before = kit.getState();
    kit.restart();
    assertEquals(before, kit.getState());
    Appended next =
        (Appended)
            append(
                "val",
                1,
                List.of(json("{}")),
                SplitStats.ofGroup(new double[] {5}, List.of(Map.of())),
                null);
    assertEquals(5, next.firstSeq());
    assertEquals(2.5, next.metrics().get("val/reward"));
    assertEquals(6.0, next.metrics().get("val/num_trajectories"));
  }

  @Test
  void appendsArrivingDuringAWriteAreCommittedTogetherAndARepeatedKeyWaitsForTheFirst() {
    store.gate = new java.util.concurrent.CountDownLatch(1);
    SplitStats s = SplitStats.ofGroup(new double[] {1}, List.of(Map.of()));
    TestProbe<AppendReply> p1 = testKit.createTestProbe();
    TestProbe<AppendReply> p2 = testKit.createTestProbe();
    TestProbe<AppendReply> p3 = testKit.createTestProbe();
    TestProbe<AppendReply> p4 = testKit.createTestProbe();
    kit.runCommand(new Append("val", 0, List.of(json("{\"n\":1}")), s, "k", p1.getRef()));
    kit.runCommand(new Append("val", 0, List.of(json("{\"n\":2}")), s, null, p2.getRef()));
    kit.runCommand(new Append("val", 0, List.of(json("{\"n\":1}")), s, "k", p3.getRef()));
    kit.runCommand(
        new Append(
            "train", 0, List.of(json("{\"n\":3}"), json("{\"n\":4}")), s, null, p4.getRef()));
    store.gate.countDown();
    Appended a1 = (Appended) p1.receiveMessage(Duration.ofSeconds(5));
    Appended a2 = (Appended) p2.receiveMessage(Duration.ofSeconds(5));
    Appended a3 = (Appended) p3.receiveMessage(Duration.ofSeconds(5));
    Appended a4 = (Appended) p4.receiveMessage(Duration.ofSeconds(5));
    assertFalse(a1.duplicate());
    assertTrue(a3.duplicate());
    assertEquals(a1.firstSeq(), a3.firstSeq());
    assertEquals(List.of(0L, 1L, 2L), List.of(a1.firstSeq(), a2.firstSeq(), a4.firstSeq()));
    // The first write held one append; the two that queued behind it shared the second write.
    assertEquals(List.of(1, 2), store.writes);
    assertEquals(4, store.rows.size());
    assertEquals(4, kit.getState().nextSeq());
    assertEquals(2.0, a2.metrics().get("val/num_trajectories"));
    assertEquals(1.0, a4.metrics().get("train/num_trajectories"));
  }

  /**
   * A split that cannot be encoded (a lone surrogate; the gateway refuses it first) would make the
   * journal reject the batch's events and stop the entity, failing every concurrent append with it.
   * It is refused alone instead; the appends around it are stored exactly once.
   */
  @Test
  void anAppendThatCannotBeJournaledFailsAloneAndTheLogKeepsServing() {
    // Commands are not serialization-checked here: the bad one is meant to reach the entity.
    EventSourcedBehaviorTestKit<Command, TrajectoryLog.Event, TrajectoryLog.State> lenient =
        EventSourcedBehaviorTestKit.create(
            testKit.system(),
            TrajectoryLog.create(
                MODEL,
                store,
                (id, step, metrics) -> CompletableFuture.completedFuture(null),
                PersistenceSettings.h2(Path.of("x"))),
            EventSourcedBehaviorTestKit.enabledSerializationSettings().withVerifyCommands(false));
    store.gate = new java.util.concurrent.CountDownLatch(1);
    SplitStats s = SplitStats.ofGroup(new double[] {1}, List.of(Map.of()));
    TestProbe<AppendReply> first = testKit.createTestProbe();
    TestProbe<AppendReply> bad = testKit.createTestProbe();
    TestProbe<AppendReply> badMetric = testKit.createTestProbe();
    TestProbe<AppendReply> after = testKit.createTestProbe();
    lenient.runCommand(new Append("val", 0, List.of(json("{\"n\":1}")), s, null, first.getRef()));
    lenient.runCommand(
        new Append("fuzz\ud800", 0, List.of(json("{\"n\":2}")), s, "kb", bad.getRef()));
    lenient.runCommand(
        new Append(
            "val",
            0,
            List.of(json("{\"n\":3}")),
            SplitStats.ofGroup(new double[] {1}, List.of(Map.of("acc\udc00", 1.0))),
            null,
            badMetric.getRef()));
    lenient.runCommand(new Append("val", 0, List.of(json("{\"n\":4}")), s, "ka", after.getRef()));
    assertInstanceOf(AppendRejected.class, bad.receiveMessage(Duration.ofSeconds(5)));
    assertInstanceOf(AppendRejected.class, badMetric.receiveMessage(Duration.ofSeconds(5)));
    store.gate.countDown();
    Appended a1 = (Appended) first.receiveMessage(Duration.ofSeconds(5));
    Appended a4 = (Appended) after.receiveMessage(Duration.ofSeconds(5));
    assertEquals(List.of(0L, 1L), List.of(a1.firstSeq(), a4.firstSeq()));
    TestProbe<AppendReply> later = testKit.createTestProbe();
    lenient.runCommand(new Append("val", 0, List.of(json("{\"n\":5}")), s, null, later.getRef()));
    assertEquals(2, ((Appended) later.receiveMessage(Duration.ofSeconds(5))).firstSeq());
    assertEquals(
        List.of("{\"n\":1}", "{\"n\":4}", "{\"n\":5}"),
        store.rows.stream().map(g -> new String(g.json(), StandardCharsets.UTF_8)).toList());
    assertEquals(3, lenient.getState().nextSeq());
  }

  @Test
  void purgeDeletesEverythingAndIsRemembered() {
    append(
        "val",
        0,
        List.of(json("{}"), json("{}")),
        SplitStats.ofGroup(new double[] {1, 2}, List.of(Map.of(), Map.of())),
        "p");
    var purged =
        kit.<dev.troupe.protocol.cluster.TrajectoryLogProtocol.Purged>runCommand(
            dev.troupe.protocol.cluster.TrajectoryLogProtocol.Purge::new);
    assertEquals(2, purged.reply().groupsDeleted());
    kit.restart();
    assertTrue(kit.getState().stats().isEmpty());
    assertTrue(kit.getState().recentKeys().isEmpty());
    assertEquals(
        0,
        kit.<TrajectoryPage>runCommand(r -> new ReadPage(null, -1, 10, 1 << 20, r))
            .reply()
            .data()
            .size());
  }
}
