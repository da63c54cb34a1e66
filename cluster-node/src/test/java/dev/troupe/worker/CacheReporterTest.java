package dev.troupe.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.protocol.kv.BlockHash;
import dev.troupe.protocol.kv.CacheReports;
import dev.troupe.protocol.kv.CacheReports.CacheReport;
import dev.troupe.protocol.kv.CacheReports.ReplicaLoad;
import dev.troupe.protocol.kv.CacheReports.SnapshotRequest;
import dev.troupe.scheduler.CacheDelta;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.pubsub.Topic;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class CacheReporterTest {
  private static ActorTestKit testKit;

  @BeforeAll
  static void start() {
    testKit = ActorTestKit.create();
  }

  @AfterAll
  static void stop() {
    testKit.shutdownTestKit();
  }

  private static ReplicaLoad load(int used) {
    return new ReplicaLoad(0, 1, 0, used, 64, List.of());
  }

  @Test
  void everyReportCarriesTheReplicasKvRole() {
    TestProbe<CacheReport> gateway = testKit.createTestProbe();
    ActorRef<Topic.Command<CacheReport>> reports =
        testKit.spawn(Topic.create(CacheReport.class, CacheReports.reportTopic("p")));
    reports.tell(Topic.subscribe(gateway.getRef()));
    ActorRef<CacheReporter.Command> reporter =
        testKit.spawn(
            CacheReporter.create(
                "p#0",
                "p",
                16,
                Duration.ofMillis(50),
                Duration.ofMillis(100),
                dev.troupe.protocol.cluster.KvRole.PREFILL));
    gateway.awaitAssert(
        Duration.ofSeconds(5),
        () -> {
          reporter.tell(
              new CacheReporter.Changed(new CacheDelta(false, List.of(), List.of()), load(0)));
          CacheReport r = gateway.receiveMessage(Duration.ofMillis(500));
          assertEquals(dev.troupe.protocol.cluster.KvRole.PREFILL, r.kvRole());
          return null;
        });
  }

  @Test
  void coalescesChangesAnswersSnapshotsAndBeatsWhileIdle() {
    TestProbe<CacheReport> gateway = testKit.createTestProbe();
    ActorRef<Topic.Command<CacheReport>> reports =
        testKit.spawn(Topic.create(CacheReport.class, CacheReports.reportTopic("r")));
    reports.tell(Topic.subscribe(gateway.getRef()));
    ActorRef<Topic.Command<SnapshotRequest>> requests =
        testKit.spawn(Topic.create(SnapshotRequest.class, CacheReports.requestTopic("r")));
    ActorRef<CacheReporter.Command> reporter =
        testKit.spawn(
            CacheReporter.create("r#0", "r", 16, Duration.ofMillis(50), Duration.ofMillis(400)));
    BlockHash a = new BlockHash(1, 1);
    BlockHash b = new BlockHash(2, 2);
    BlockHash c = new BlockHash(3, 3);
    // Wait until the subscription has spread, then start from a clean sequence view.
    gateway.awaitAssert(
        Duration.ofSeconds(5),
        () -> {
          reporter.tell(
              new CacheReporter.Changed(new CacheDelta(false, List.of(), List.of()), load(0)));
          gateway.receiveMessage(Duration.ofMillis(500));
          return null;
        });
    // Two steps within one interval: a and b stored, then a evicted and c stored.
    reporter.tell(
        new CacheReporter.Changed(new CacheDelta(false, List.of(a, b), List.of()), load(2)));
    reporter.tell(
        new CacheReporter.Changed(new CacheDelta(false, List.of(c), List.of(a)), load(3)));
    CacheReport r = nextWithChanges(gateway);
    assertEquals("r#0", r.replica());
    assertFalse(r.replace());
    assertEquals(Set.of(b, c), new HashSet<>(r.storedHashes()), "a came and went in one window");
    assertTrue(r.removedHashes().isEmpty());
    assertEquals(3, r.load().kvBlocksUsed());
    // A gateway that missed something asks; the reply replaces with the whole index.
    CacheReport snapshot =
        gateway.awaitAssert(
            Duration.ofSeconds(5),
            () -> {
              requests.tell(Topic.publish(new SnapshotRequest("r#0")));
              CacheReport s = gateway.receiveMessage(Duration.ofMillis(300));
              assertTrue(s.replace());
              return s;
            });
    assertEquals(Set.of(b, c), new HashSet<>(snapshot.storedHashes()));
    assertTrue(snapshot.seq() > r.seq());
    // Idle: a heartbeat with nothing new, the sequence still contiguous.
    CacheReport beat = gateway.receiveMessage(Duration.ofSeconds(2));
    assertTrue(beat.stored().length == 0 && beat.removed().length == 0 && !beat.replace());
    CacheReport next = gateway.receiveMessage(Duration.ofSeconds(2));
    assertEquals(beat.seq() + 1, next.seq());
  }

  @Test
  void aReplicaThatFallsIdleReportsAtOnceNotAtTheNextTick() {
    TestProbe<CacheReport> gateway = testKit.createTestProbe();
    ActorRef<Topic.Command<CacheReport>> reports =
        testKit.spawn(Topic.create(CacheReport.class, CacheReports.reportTopic("idle")));
    reports.tell(Topic.subscribe(gateway.getRef()));
    // No tick and no heartbeat within the test: every report below is the idle one.
    ActorRef<CacheReporter.Command> reporter =
        testKit.spawn(
            CacheReporter.create(
                "idle#0", "idle", 16, Duration.ofMinutes(10), Duration.ofMinutes(10)));
    ReplicaLoad busy = new ReplicaLoad(0, 1, 0, 4, 64, List.of());
    ReplicaLoad idle = new ReplicaLoad(0, 0, 0, 0, 64, List.of());
    CacheDelta none = new CacheDelta(false, List.of(), List.of());
    gateway.awaitAssert(
        Duration.ofSeconds(5),
        () -> {
          reporter.tell(new CacheReporter.Changed(none, busy));
          reporter.tell(new CacheReporter.Changed(none, idle));
          gateway.receiveMessage(Duration.ofMillis(300));
          return null;
        });
    BlockHash a = new BlockHash(7, 7);
    reporter.tell(new CacheReporter.Changed(new CacheDelta(false, List.of(a), List.of()), busy));
    gateway.expectNoMessage(Duration.ofMillis(300)); // busy: coalesced until the tick
    reporter.tell(new CacheReporter.Changed(none, idle));
    CacheReport r = gateway.receiveMessage(Duration.ofSeconds(2));
    assertEquals(0, r.load().running());
    assertEquals(0, r.load().kvBlocksUsed());
    assertEquals(Set.of(a), new HashSet<>(r.storedHashes()));
    reporter.tell(new CacheReporter.Changed(none, idle)); // still idle: nothing new to say
    gateway.expectNoMessage(Duration.ofMillis(300));
  }

  private static CacheReport nextWithChanges(TestProbe<CacheReport> probe) {
    for (int i = 0; i < 20; i++) {
      CacheReport r = probe.receiveMessage(Duration.ofSeconds(2));
      if (r.stored().length > 0 || r.removed().length > 0) return r;
    }
    throw new AssertionError("no report with changes");
  }
}
