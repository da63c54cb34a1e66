package dev.troupe.preview;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.persistence.PersistenceSettings;
import dev.troupe.protocol.cluster.TrajectoryLogProtocol;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.sharding.ShardRegion.CurrentShardRegionState;
import org.apache.pekko.cluster.sharding.typed.GetShardRegionState;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Leave;
import org.junit.jupiter.api.Test;

/**
 * Two nodes on one real PostgreSQL: a model's trajectory log lives on one of them; logging through
 * the other node's HTTP crosses the cluster (large messages included); then the host leaves and the
 * entity starts on the remaining node with everything it had, and keeps logging.
 */
class TwoNodeHandoffTest {

  @Test
  void aLogMovesToTheOtherNodeWhenItsHostLeavesWithNoDataLost() throws Exception {
    PersistenceSettings settings =
        PersistenceSettings.postgres(RealPostgres.sharedDatabase(), "postgres", "");
    PreviewNode a = PreviewNode.start(settings);
    PreviewNode b = PreviewNode.start(settings, a.address());
    try {
      awaitUp(a.system, 2);
      PreviewClient viaA = new PreviewClient(a.baseUrl(), PreviewNode.KEY);
      PreviewClient viaB = new PreviewClient(b.baseUrl(), PreviewNode.KEY);
      String id = viaA.createModel("two-node");

      // ~1.5 MB in one request: more than Artery's ordinary frame, so the large-message path is
      // used.
      String big = "x".repeat(64 * 1024);
      StringBuilder groups = new StringBuilder();
      for (int i = 0; i < 24; i++) {
        if (i > 0) groups.append(',');
        groups.append(group("before-" + i, big));
      }
      String body = "{\"split\":\"val\",\"trajectory_groups\":[" + groups + "]}";
      assertEquals(200, viaB.post("/v1/preview/models/" + id + "/log", body).status());
      assertEquals(
          200,
          viaA.post("/v1/preview/models/" + id + "/log", body.replace("before-", "again-"))
              .status());
      assertEquals(48, viaA.allGroups(id, null).size());

      PreviewNode host = hosts(a, id) ? a : b;
      PreviewNode other = host == a ? b : a;
      assertTrue(hosts(host, id));
      Cluster.get(host.system).manager().tell(Leave.create(host.address()));
      host.system.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
      awaitUp(other.system, 1);

      PreviewClient survivor = new PreviewClient(other.baseUrl(), PreviewNode.KEY);
      List<JsonNode> all = awaitGroups(survivor, id, 48);
      assertEquals("before-0", marker(all.get(0)));
      assertEquals("again-23", marker(all.get(47)));
      assertEquals(big, all.get(5).get("trajectories").get(0).get("metadata").get("pad").asText());
      assertEquals(
          200,
          survivor
              .post(
                  "/v1/preview/models/" + id + "/log",
                  "{\"split\":\"val\",\"trajectory_groups\":[" + group("after", "") + "]}")
              .status());
      all = survivor.allGroups(id, null);
      assertEquals(49, all.size());
      assertEquals("after", marker(all.get(48)));
      assertTrue(hosts(other, id));
      JsonNode metrics =
          survivor
              .get("/v1/preview/models/" + id + "/checkpoints")
              .json()
              .get("data")
              .get(0)
              .get("metrics");
      assertEquals(49, metrics.get("val/num_trajectories").asInt());
    } finally {
      b.close();
      a.close();
    }
  }

  private static String group(String marker, String pad) {
    return "{\"trajectories\":[{\"messages_and_choices\":[{\"role\":\"user\",\"content\":\"q\"}],"
        + "\"reward\":1,\"metadata\":{\"marker\":\""
        + marker
        + "\",\"pad\":\""
        + pad
        + "\"}}]}";
  }

  private static String marker(JsonNode g) {
    return g.get("trajectories").get(0).get("metadata").get("marker").asText();
  }

  /** The survivor takes over the shard coordinator first; reads may fail briefly meanwhile. */
  private static List<JsonNode> awaitGroups(PreviewClient client, String id, int n)
      throws InterruptedException {
    RuntimeException last = null;
    for (int i = 0; i < 60; i++) {
      try {
        List<JsonNode> all = client.allGroups(id, null);
        if (all.size() == n) return all;
      } catch (RuntimeException e) {
        last = e;
      }
      Thread.sleep(500);
    }
    throw new AssertionError("groups did not come back", last);
  }

  private static boolean hosts(PreviewNode node, String modelId) {
    TestProbe<CurrentShardRegionState> probe = TestProbe.create(node.system);
    ClusterSharding.get(node.system)
        .shardState()
        .tell(new GetShardRegionState(TrajectoryLogProtocol.TYPE_KEY, probe.getRef()));
    CurrentShardRegionState state = probe.receiveMessage(Duration.ofSeconds(10));
    return state.getShards().stream().anyMatch(s -> s.getEntityIds().contains(modelId));
  }

  private static void awaitUp(ActorSystem<?> system, int members) throws InterruptedException {
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
