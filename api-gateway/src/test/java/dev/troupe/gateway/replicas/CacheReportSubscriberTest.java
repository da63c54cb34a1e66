package dev.troupe.gateway.replicas;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.troupe.protocol.kv.BlockHash;
import dev.troupe.protocol.kv.CacheReports;
import dev.troupe.protocol.kv.CacheReports.CacheReport;
import dev.troupe.protocol.kv.CacheReports.ReplicaLoad;
import dev.troupe.protocol.kv.CacheReports.SnapshotRequest;
import java.time.Duration;
import java.util.List;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.pubsub.Topic;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Reports published on a model's topic reach the table; a lost report asks for a snapshot. */
class CacheReportSubscriberTest {
  private static ActorTestKit testKit;

  @BeforeAll
  static void start() {
    testKit = ActorTestKit.create();
  }

  @AfterAll
  static void stop() {
    testKit.shutdownTestKit();
  }

  private static CacheReport report(long seq, boolean replace, BlockHash... stored) {
    return new CacheReport(
        "m#1",
        "inc",
        seq,
        replace,
        16,
        CacheReports.pack(List.of(stored)),
        null,
        new ReplicaLoad(0, 1, 0, 4, 100, List.of()));
  }

  @Test
  void reportsFeedTheTableAndGapsAskTheReplicaForASnapshot() {
    RoutingTable table = new RoutingTable();
    RoutingSettings settings =
        new RoutingSettings(true, 1.0, 64, Duration.ofSeconds(10), Duration.ZERO, true);
    ActorRef<Topic.Command<CacheReport>> reports =
        testKit.spawn(Topic.create(CacheReport.class, CacheReports.reportTopic("m")));
    ActorRef<Topic.Command<SnapshotRequest>> requests =
        testKit.spawn(Topic.create(SnapshotRequest.class, CacheReports.requestTopic("m")));
    TestProbe<SnapshotRequest> replica = testKit.createTestProbe();
    requests.tell(Topic.subscribe(replica.getRef()));
    testKit.spawn(CacheReportSubscriber.create("m", table, settings));
    BlockHash a = new BlockHash(1, 2);
    BlockHash b = new BlockHash(3, 4);
    // Subscriptions spread through the receptionist: publish until the first report lands.
    replica.awaitAssert(
        () -> {
          reports.tell(Topic.publish(report(1, false, a)));
          assertEquals(1, table.view("m", 1).numCachedBlocks());
          return null;
        });
    assertEquals(4, table.view("m", 1).load().kvBlocksUsed());
    assertEquals(16, table.blockSize("m"));
    reports.tell(Topic.publish(report(3, false, b))); // 2 was lost
    assertEquals(new SnapshotRequest("m#1"), replica.receiveMessage());
    reports.tell(Topic.publish(report(4, true, b)));
    replica.awaitAssert(
        () -> {
          assertEquals(1, table.view("m", 1).cachedBlocks(List.of(b)));
          assertEquals(0, table.view("m", 1).cachedBlocks(List.of(a)));
          return null;
        });
    replica.expectNoMessage(Duration.ofMillis(200));
  }
}
