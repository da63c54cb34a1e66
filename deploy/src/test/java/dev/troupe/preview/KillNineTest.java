package dev.troupe.preview;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.persistence.PersistenceSettings;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A node in a separate JVM is killed with SIGKILL while four clients log: after a restart on the
 * same database every acknowledged group is there exactly once, and re-sending the requests that
 * got no answer, with their Idempotency-Keys, stores each of them exactly once too.
 */
class KillNineTest {
  @TempDir Path dir;

  @Test
  void acknowledgedGroupsSurviveSigkillAndNoneIsStoredTwice() throws Exception {
    Path db = dir.resolve("troupe");
    Path portFile = dir.resolve("port");
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    Process child =
        new ProcessBuilder(
                java,
                "-Xmx384m",
                "-cp",
                System.getProperty("java.class.path"),
                LogNodeMain.class.getName(),
                db.toString(),
                portFile.toString())
            .redirectErrorStream(true)
            .redirectOutput(dir.resolve("child.log").toFile())
            .start();
    try {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
      while (!Files.exists(portFile)) {
        assertTrue(child.isAlive(), "child died: " + Files.readString(dir.resolve("child.log")));
        assertTrue(System.nanoTime() < deadline, "child did not start");
        Thread.sleep(100);
      }
      PreviewClient client =
          new PreviewClient(
              "http://127.0.0.1:" + Files.readString(portFile).trim(), PreviewNode.KEY);
      String id = client.createModel("kill-nine");

      Set<String> acked = ConcurrentHashMap.newKeySet();
      Map<String, String> unanswered = new ConcurrentHashMap<>(); // idempotency key -> body
      AtomicInteger ackCount = new AtomicInteger();
      CountDownLatch enough = new CountDownLatch(1);
      List<Thread> clients = new ArrayList<>();
      for (int c = 0; c < 4; c++) {
        int clientNo = c;
        Thread t =
            new Thread(
                () -> {
                  for (int req = 0; ; req++) {
                    String key = "c" + clientNo + "-r" + req;
                    List<String> markers = List.of(key + "-g0", key + "-g1");
                    String body =
                        "{\"split\":\"train\",\"trajectory_groups\":["
                            + group(markers.get(0))
                            + ","
                            + group(markers.get(1))
                            + "]}";
                    unanswered.put(key, body);
                    try {
                      PreviewClient.Reply r =
                          client.post("/v1/preview/models/" + id + "/log", body, key);
                      if (r.status() != 200) return;
                    } catch (RuntimeException e) {
                      return; // the node is gone: this request stays unanswered
                    }
                    unanswered.remove(key);
                    acked.addAll(markers);
                    if (ackCount.incrementAndGet() >= 40) enough.countDown();
                  }
                });
        t.start();
        clients.add(t);
      }
      assertTrue(enough.await(120, TimeUnit.SECONDS), "clients were not acknowledged");
      child.destroyForcibly(); // SIGKILL
      assertTrue(child.waitFor(30, TimeUnit.SECONDS));
      for (Thread t : clients) t.join(TimeUnit.SECONDS.toMillis(150));

      try (PreviewNode node = PreviewNode.start(PersistenceSettings.h2(db))) {
        PreviewClient after = new PreviewClient(node.baseUrl(), PreviewNode.KEY);
        Map<String, Integer> counts = count(after.allGroups(id, null));
        for (String m : acked)
          assertEquals(1, counts.getOrDefault(m, 0), "acknowledged group " + m);
        counts.values().forEach(n -> assertEquals(1, n));
        // Retries of the unanswered requests: stored once, whether or not the first try landed.
        for (Map.Entry<String, String> e : unanswered.entrySet()) {
          assertEquals(
              200,
              after.post("/v1/preview/models/" + id + "/log", e.getValue(), e.getKey()).status());
        }
        Map<String, Integer> finalCounts = count(after.allGroups(id, null));
        finalCounts.values().forEach(n -> assertEquals(1, n));
        assertEquals(acked.size() + 2 * unanswered.size(), finalCounts.size());
      }
    } finally {
      child.destroyForcibly();
    }
  }

  /**
   * Issue 21 (found by the hostile suite): a 20 MB group, a few small ones after it, and a SIGKILL
   * two seconds later left H2 2.2.224's file unreadable ("File corrupted while reading record",
   * MVStore's "Double mark"): the node could not start and every logged group was out of reach. H2
   * 2.3.232 opens it with everything acknowledged.
   */
  @Test
  void aLargeGroupAcknowledgedJustBeforeSigkillIsReadBack() throws Exception {
    Path db = dir.resolve("large");
    Path portFile = dir.resolve("large-port");
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    Process child =
        new ProcessBuilder(
                java,
                "-Xmx512m",
                "-cp",
                System.getProperty("java.class.path"),
                LogNodeMain.class.getName(),
                db.toString(),
                portFile.toString())
            .redirectErrorStream(true)
            .redirectOutput(dir.resolve("large-child.log").toFile())
            .start();
    try {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
      while (!Files.exists(portFile)) {
        assertTrue(
            child.isAlive(), "child died: " + Files.readString(dir.resolve("large-child.log")));
        assertTrue(System.nanoTime() < deadline, "child did not start");
        Thread.sleep(100);
      }
      PreviewClient client =
          new PreviewClient(
              "http://127.0.0.1:" + Files.readString(portFile).trim(), PreviewNode.KEY);
      String id = client.createModel("large-before-kill");
      String big =
          group("big")
              .replace(
                  "\"reward\":1", "\"reward\":1,\"logs\":[\"" + "y".repeat(20_000_000) + "\"]");
      String body =
          "{\"split\":\"train\",\"trajectory_groups\":[" + big + "," + group("small") + "]}";
      assertEquals(200, client.post("/v1/preview/models/" + id + "/log", body).status());
      // a few small writes after it, then a moment for the store's background writer
      for (int i = 0; i < 5; i++) {
        String small = "{\"split\":\"train\",\"trajectory_groups\":[" + group("after-" + i) + "]}";
        assertEquals(200, client.post("/v1/preview/models/" + id + "/log", small).status());
      }
      Thread.sleep(2000);
      child.destroyForcibly(); // SIGKILL
      assertTrue(child.waitFor(30, TimeUnit.SECONDS));

      try (PreviewNode node = PreviewNode.start(PersistenceSettings.h2(db))) {
        Map<String, Integer> counts =
            count(new PreviewClient(node.baseUrl(), PreviewNode.KEY).allGroups(id, null));
        assertEquals(
            Map.of(
                "big", 1, "small", 1, "after-0", 1, "after-1", 1, "after-2", 1, "after-3", 1,
                "after-4", 1),
            counts);
      }
    } finally {
      child.destroyForcibly();
    }
  }

  private static String group(String marker) {
    return "{\"trajectories\":[{\"messages_and_choices\":[{\"role\":\"user\",\"content\":\"q\"}],"
        + "\"reward\":1,\"metadata\":{\"marker\":\""
        + marker
        + "\"}}]}";
  }

  private static Map<String, Integer> count(List<JsonNode> groups) {
    Map<String, Integer> out = new HashMap<>();
    for (JsonNode g : groups) {
      out.merge(
          g.get("trajectories").get(0).get("metadata").get("marker").asText(), 1, Integer::sum);
    }
    return out;
  }
}
