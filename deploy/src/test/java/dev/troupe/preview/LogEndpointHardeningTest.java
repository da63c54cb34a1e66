package dev.troupe.preview;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.gateway.http.GatewaySettings;
import dev.troupe.persistence.PersistenceSettings;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * The log endpoint validates everything it will store (issue 9): text that cannot be encoded is a
 * 422 at its {@code loc} and never reaches the entity, so good concurrent writes to the same model
 * are all acknowledged and stored exactly once (before, the journal rejected the event, the entity
 * stopped, and the good writes got a plain-text 503 after 20 s although some were stored); numbers,
 * nesting and huge bodies hit this endpoint's own limits (422 or 413 with {@code detail[]} or the
 * OpenAI error, never a 500).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class LogEndpointHardeningTest {
  @TempDir static Path dir;
  private PreviewNode node;
  private PreviewClient client;

  @BeforeAll
  void start() {
    node =
        PreviewNode.start(
            PersistenceSettings.h2(dir.resolve("troupe")),
            null,
            GatewaySettings.DEFAULT_MAX_BODY_BYTES);
    client = new PreviewClient(node.baseUrl(), PreviewNode.KEY);
  }

  @AfterAll
  void stop() {
    if (node != null) node.close();
  }

  private static String trajectory(String content, String extra) {
    return "{\"messages_and_choices\":[{\"role\":\"user\",\"content\":\""
        + content
        + "\"}],\"reward\":1"
        + extra
        + "}";
  }

  private static String body(String split, String trajectory) {
    return PreviewApiSuite.logBody(split, "{\"trajectories\":[" + trajectory + "]}");
  }

  private static List<String> locs(PreviewClient.Reply r) {
    assertEquals(422, r.status(), r.body());
    List<String> out = new ArrayList<>();
    for (JsonNode d : r.json().get("detail")) {
      List<String> parts = new ArrayList<>();
      d.get("loc").forEach(l -> parts.add(l.asText()));
      out.add(String.join(".", parts) + ":" + d.get("type").asText());
    }
    return out;
  }

  @Test
  void aLoneSurrogateFailsAloneWhileConcurrentGoodWritesAreStoredExactlyOnce() throws Exception {
    String id = client.createModel("surrogate-" + UUID.randomUUID());
    String path = "/v1/preview/models/" + id + "/log";
    ExecutorService pool = Executors.newFixedThreadPool(8);
    Map<String, Integer> goodStatus = new ConcurrentHashMap<>();
    List<Future<PreviewClient.Reply>> bad = new ArrayList<>();
    List<Future<?>> good = new ArrayList<>();
    try {
      for (int round = 0; round < 6; round++) {
        for (int w = 0; w < 6; w++) {
          String marker = "good-" + round + "-" + w;
          good.add(
              pool.submit(
                  () ->
                      goodStatus.put(
                          marker,
                          client.post(path, body("val", trajectory(marker, ""))).status())));
        }
        bad.add(pool.submit(() -> client.post(path, body("fuzz\\ud800", trajectory("bad", "")))));
        bad.add(
            pool.submit(
                () -> client.post(path, body("val", trajectory("bad\\udc00", "")), "bad-key")));
      }
      for (Future<?> f : good) f.get();
      for (Future<PreviewClient.Reply> f : bad) {
        List<String> locs = locs(f.get());
        assertEquals(1, locs.size(), locs.toString());
        assertTrue(locs.get(0).endsWith(":string_unicode"), locs.toString());
      }
    } finally {
      pool.shutdownNow();
    }
    assertEquals(36, goodStatus.size());
    goodStatus.forEach((marker, status) -> assertEquals(200, status, marker));
    Map<String, Integer> stored = new HashMap<>();
    for (JsonNode g : client.allGroups(id, null)) {
      String content =
          g.get("trajectories").get(0).get("messages_and_choices").get(0).get("content").asText();
      stored.merge(content, 1, Integer::sum);
    }
    assertEquals(goodStatus.keySet(), stored.keySet(), "every acknowledged write, nothing else");
    stored.forEach((marker, n) -> assertEquals(1, n, marker + " stored once"));
  }

  @Test
  void surrogatesAnywhereAreNamedByLoc() {
    String path = "/v1/preview/models/" + client.createModel("loc-" + UUID.randomUUID()) + "/log";
    String t = "body.trajectory_groups.0.trajectories.0.";
    assertEquals(
        List.of(t + "metadata.k\ufffd:string_unicode"),
        locs(client.post(path, body("val", trajectory("x", ",\"metadata\":{\"k\\ud800\":1}")))));
    assertEquals(
        List.of(t + "metadata.k:string_unicode"),
        locs(client.post(path, body("val", trajectory("x", ",\"metadata\":{\"k\":\"\\udbff\"}")))));
    assertEquals(
        List.of(t + "messages_and_choices.0.content:string_unicode"),
        locs(client.post(path, body("val", trajectory("\\ud800x", "")))));
  }

  @Test
  void numbersNestingAndSizesHitTheEndpointsOwnLimits() throws Exception {
    String path =
        "/v1/preview/models/" + client.createModel("limits-" + UUID.randomUUID()) + "/log";
    String t = "body.trajectory_groups.0.trajectories.0.";
    assertEquals(
        List.of(t + "reward:value_error"),
        locs(
            client.post(
                path,
                body(
                    "val",
                    trajectory("x", "")
                        .replace("\"reward\":1", "\"reward\":" + "7".repeat(100_000))))));
    List<String> deepMetadata =
        locs(
            client.post(
                path,
                body(
                    "val",
                    trajectory(
                        "x",
                        ",\"metadata\":" + "{\"a\":".repeat(10_000) + "1" + "}".repeat(10_000)))));
    assertTrue(deepMetadata.get(0).startsWith(t + "metadata.a.a."), deepMetadata.toString());
    List<String> deepUnknown =
        locs(
            client.post(
                path,
                body(
                    "val",
                    trajectory("x", ",\"extra\":" + "[".repeat(10_000) + "]".repeat(10_000)))));
    assertTrue(deepUnknown.get(0).startsWith(t + "extra.0.0."), deepUnknown.toString());
    // a 25 MB string is under the 64 MiB body limit: stored, not refused by the JSON reader
    String big = "y".repeat(25_000_000);
    PreviewClient.Reply stored =
        client.post(path, body("val", trajectory("x", ",\"log\":\"" + big + "\"")));
    assertEquals(
        200, stored.status(), stored.body().substring(0, Math.min(300, stored.body().length())));
  }

  @Test
  void aChunkedBodyOverTheLimitIs413() throws Exception {
    String path = "/v1/preview/models/" + client.createModel("huge-" + UUID.randomUUID()) + "/log";
    byte[] head =
        "{\"split\":\"val\",\"trajectory_groups\":[{\"trajectories\":[{\"reward\":1,\"messages_and_choices\":[],\"s\":\""
            .getBytes(StandardCharsets.UTF_8);
    long total = 200L * 1024 * 1024;
    // 200 MB of one string, generated as it is sent (chunked: no Content-Length to refuse early)
    java.util.function.Supplier<InputStream> stream =
        () ->
            new InputStream() {
              long sent;

              @Override
              public int read() {
                if (sent >= total) return -1;
                int b = sent < head.length ? head[(int) sent] : 'z';
                sent++;
                return b;
              }

              @Override
              public int read(byte[] b, int off, int len) {
                if (sent >= total) return -1;
                int n = (int) Math.min(len, total - sent);
                for (int i = 0; i < n; i++) b[off + i] = (byte) read();
                return n;
              }
            };
    HttpResponse<String> r = null;
    java.io.IOException last = null;
    for (int attempt = 0; attempt < 5 && r == null; attempt++) {
      try {
        r =
            HttpClient.newHttpClient()
                .send(
                    HttpRequest.newBuilder(URI.create(node.baseUrl() + path))
                        .header("Authorization", "Bearer " + PreviewNode.KEY)
                        .header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofInputStream(stream))
                        .build(),
                    HttpResponse.BodyHandlers.ofString());
      } catch (java.io.IOException e) {
        last = e; // the server answers mid-body and closes: only a transport reset is retried
      }
    }
    if (r == null) throw last;
    assertEquals(413, r.statusCode(), r.body());
    assertTrue(r.body().contains("PayloadTooLargeError"), r.body());
  }

  /**
   * Issue 21: a lone surrogate in a model's names reached the registry's journal, which could not
   * encode the event; the registry stopped and every later create got a 503 after 30 s.
   */
  @Test
  void modelNamesThatCannotBeStoredAre422AndTheRegistryKeepsServing() {
    for (String field : List.of("project", "name", "entity")) {
      String json =
          "{\"project\":\"p\",\"name\":\"n-"
              + UUID.randomUUID()
              + "\",\"base_model\":\""
              + PreviewNode.BASE_MODEL
              + "\"}";
      json = json.replace("{", "{\"" + field + "\":\"x\\ud800\",");
      if (!field.equals("entity")) json = json.replaceFirst(",\"" + field + "\":\"[^\"]*\"", "");
      assertEquals(
          List.of("body." + field + ":string_unicode"),
          locs(client.post("/v1/preview/models", json)),
          json);
    }
    // the registry still answers at once
    String id = client.createModel("after-surrogates-" + UUID.randomUUID());
    assertEquals(200, client.get("/v1/preview/models/" + id).status());
  }

  /** Issue 21: {@code {…}}}}} was a 200 here while every other endpoint refuses trailing data. */
  @Test
  void trailingDataAfterTheBodyIs422AndNothingIsStored() {
    String id = client.createModel("trailing-" + UUID.randomUUID());
    String path = "/v1/preview/models/" + id + "/log";
    for (String tail : List.of("}}}}", " {}", "x", "]")) {
      List<String> locs = locs(client.post(path, body("val", trajectory("t", "")) + tail));
      assertEquals(1, locs.size(), locs.toString());
      assertTrue(locs.get(0).endsWith(":json_invalid"), tail + " " + locs);
    }
    assertEquals(200, client.post(path, body("val", trajectory("t", "")) + " \n").status());
    assertEquals(1, client.allGroups(id, null).size());
  }
}
