package dev.troupe.preview;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.persistence.PersistenceSettings;
import dev.troupe.protocol.Json;
import java.io.ByteArrayInputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * The preview data API through real HTTP on a real node (entities, journal, trajectory store):
 * every endpoint, every error shape, idempotency, reads and export, and a restart. Subclasses pick
 * the database (embedded H2, real PostgreSQL).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class PreviewApiSuite {
  static final long BODY_LIMIT = 4L * 1024 * 1024;

  PreviewNode node;
  PreviewClient client;

  /** Fresh, empty database settings for this class. */
  abstract PersistenceSettings settings();

  @BeforeAll
  void startNode() {
    node = PreviewNode.start(settings(), null, BODY_LIMIT);
    client = new PreviewClient(node.baseUrl(), PreviewNode.KEY);
  }

  @AfterAll
  void stopNode() throws Exception {
    if (node != null) node.close();
  }

  static String group(double... rewards) {
    StringBuilder sb = new StringBuilder("{\"trajectories\":[");
    for (int i = 0; i < rewards.length; i++) {
      if (i > 0) sb.append(',');
      sb.append("{\"messages_and_choices\":[{\"role\":\"user\",\"content\":\"hi\"},")
          .append(
              "{\"finish_reason\":\"stop\",\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"yo\"}}],")
          .append("\"reward\":")
          .append(rewards[i])
          .append(",\"metrics\":{\"correct\":")
          .append(i % 2 == 0)
          .append(",\"len\":")
          .append(i + 1)
          .append("},\"metadata\":{\"n\":")
          .append(i)
          .append("},\"extra_field\":\"kept\"}");
    }
    return sb.append("],\"exceptions\":[]}").toString();
  }

  static String logBody(String split, String... groups) {
    return "{\"split\":\"" + split + "\",\"trajectory_groups\":[" + String.join(",", groups) + "]}";
  }

  @Test
  void createGetListAndDeleteModels() {
    String name = "m-" + UUID.randomUUID();
    String other = client.createModel("other-" + UUID.randomUUID());
    client.post("/v1/preview/models/" + other + "/log", logBody("val", group(1)));
    PreviewClient.Reply created =
        client.post(
            "/v1/preview/models",
            "{\"entity\":null,\"project\":\"proj\",\"name\":\""
                + name
                + "\",\"base_model\":\""
                + PreviewNode.BASE_MODEL
                + "\"}");
    assertEquals(200, created.status(), created.body());
    JsonNode m = created.json();
    String id = m.get("id").asText();
    assertEquals(id, UUID.fromString(id).toString());
    assertEquals("troupe", m.get("entity").asText());
    assertEquals("proj", m.get("project").asText());
    assertEquals(PreviewNode.BASE_MODEL, m.get("base_model").asText());
    assertEquals(8, m.get("run_id").asText().length());

    String again =
        "{\"project\":\"proj\",\"name\":\""
            + name
            + "\",\"base_model\":\""
            + PreviewNode.BASE_MODEL
            + "\"";
    PreviewClient.Reply conflict = client.post("/v1/preview/models", again + "}");
    assertEquals(409, conflict.status(), conflict.body());
    PreviewClient.Reply existing =
        client.post("/v1/preview/models", again + ",\"return_existing\":true}");
    assertEquals(200, existing.status());
    assertEquals(id, existing.json().get("id").asText());

    PreviewClient.Reply got = client.get("/v1/preview/models/" + id);
    assertEquals(200, got.status());
    assertEquals(name, got.json().get("name").asText());

    client.post("/v1/preview/models/" + id + "/log", logBody("val", group(1), group(2)));
    assertEquals(2, client.allGroups(id, null).size());
    PreviewClient.Reply deleted = client.delete("/v1/preview/models/" + id, null);
    assertEquals(200, deleted.status(), deleted.body());
    assertEquals(id, deleted.json().get("model_id").asText());
    assertEquals(1, deleted.json().get("deleted_checkpoints").asInt());
    assertEquals(404, client.get("/v1/preview/models/" + id).status());
    assertEquals(404, client.get("/v1/preview/models/" + id + "/trajectories").status());
    assertEquals(404, client.delete("/v1/preview/models/" + id, null).status());
    // Another model's trajectories are untouched.
    assertEquals(1, client.allGroups(other, null).size());
    assertEquals(
        404, client.post("/v1/preview/models/" + id + "/log", logBody("val", group(1))).status());
    // The name is free again: a new model, a new id.
    PreviewClient.Reply reborn = client.post("/v1/preview/models", again + "}");
    assertEquals(200, reborn.status());
    assertNotEquals(id, reborn.json().get("id").asText());
  }

  @Test
  void createModelErrors() {
    PreviewClient.Reply missing =
        client.post("/v1/preview/models", "{\"entity\":5,\"return_existing\":\"x\"}");
    assertEquals(422, missing.status());
    assertEquals(
        Set.of(
            "body.entity:string_type",
            "body.project:missing",
            "body.name:missing",
            "body.base_model:missing",
            "body.return_existing:bool_type"),
        locs(missing.json()));
    PreviewClient.Reply unserved =
        client.post(
            "/v1/preview/models", "{\"project\":\"p\",\"name\":\"x\",\"base_model\":\"gpt-9\"}");
    assertEquals(400, unserved.status());
    String msg = unserved.json().get("error").get("message").asText();
    assertTrue(msg.contains("gpt-9") && msg.contains(PreviewNode.BASE_MODEL), msg);
    assertEquals(401, new PreviewClient(node.baseUrl(), null).get("/v1/preview/models").status());
    assertEquals(
        401, new PreviewClient(node.baseUrl(), "wrong").post("/v1/preview/models", "{}").status());
    assertEquals(404, client.get("/v1/preview/models/not-a-uuid").status());
    assertEquals(404, client.get("/v1/preview/models/" + UUID.randomUUID()).status());
  }

  @Test
  void listModelsInCursorPages() {
    List<String> ids = new ArrayList<>();
    for (int i = 0; i < 5; i++) ids.add(client.createModel("page-" + UUID.randomUUID()));
    List<String> seen = new ArrayList<>();
    String after = null;
    int pages = 0;
    while (true) {
      PreviewClient.Reply r =
          client.get("/v1/preview/models?limit=2" + (after == null ? "" : "&after=" + after));
      assertEquals(200, r.status());
      JsonNode page = r.json();
      assertEquals("list", page.get("object").asText());
      page.get("data").forEach(d -> seen.add(d.get("id").asText()));
      pages++;
      if (!page.get("has_more").asBoolean()) break;
      after = page.get("last_id").asText();
    }
    assertTrue(pages >= 3);
    assertTrue(seen.containsAll(ids));
    assertEquals(seen.size(), new HashSet<>(seen).size());
    // Creation order is kept.
    assertTrue(seen.indexOf(ids.get(0)) < seen.indexOf(ids.get(4)));
    PreviewClient.Reply bad = client.get("/v1/preview/models?limit=0");
    assertEquals(422, bad.status());
    assertEquals(Set.of("query.limit:greater_than_equal"), locs(bad.json()));
    assertEquals(
        Set.of("query.limit:int_parsing"), locs(client.get("/v1/preview/models?limit=x").json()));
    assertEquals(
        Set.of("query.limit:less_than_equal"),
        locs(client.get("/v1/preview/models?limit=101").json()));
  }

  @Test
  void checkpointsStartAtStepZeroAndCarryLogMetrics() {
    String id = client.createModel("cp-" + UUID.randomUUID());
    PreviewClient.Reply cps =
        client.get("/v1/preview/models/" + id + "/checkpoints?limit=1&order=desc");
    assertEquals(200, cps.status(), cps.body());
    JsonNode data = cps.json().get("data");
    assertEquals(1, data.size());
    assertEquals(0, data.get(0).get("step").asLong());
    assertEquals(data.get(0).get("id").asText(), cps.json().get("last_id").asText());

    // rewards 1,3 (std 1) and 0,0,3 (std sqrt 2); metrics correct: t,f,t,f,t; len 1,2,1,2,3
    PreviewClient.Reply logged =
        client.post(
            "/v1/preview/models/" + id + "/log", logBody("val", group(1, 3), group(0, 0, 3)));
    assertEquals(200, logged.status(), logged.body());
    JsonNode summary = logged.json();
    assertEquals(2, summary.get("num_groups").asInt());
    assertEquals(5, summary.get("num_trajectories").asInt());
    assertEquals(0, summary.get("step").asLong());

    JsonNode metrics =
        client
            .get("/v1/preview/models/" + id + "/checkpoints")
            .json()
            .get("data")
            .get(0)
            .get("metrics");
    assertEquals(7.0 / 5, metrics.get("val/reward").asDouble(), 1e-12);
    assertEquals((1 + Math.sqrt(2)) / 2, metrics.get("val/reward_std_dev").asDouble(), 1e-12);
    assertEquals(5, metrics.get("val/num_trajectories").asDouble());
    // rewards 1,3,0,0,3: mean 1.4, squared deviations .16+2.56+1.96+1.96+2.56 = 9.2
    assertEquals(Math.sqrt(9.2 / 5), metrics.get("val/reward_std").asDouble(), 1e-12);
    assertEquals(3.0 / 5, metrics.get("val/correct").asDouble(), 1e-12);
    assertEquals(9.0 / 5, metrics.get("val/len").asDouble(), 1e-12);

    // A second log at the same step folds into the same split metrics; another split is separate.
    client.post("/v1/preview/models/" + id + "/log", logBody("val", group(2)));
    client.post("/v1/preview/models/" + id + "/log", logBody("train", group(10, 20)));
    metrics =
        client
            .get("/v1/preview/models/" + id + "/checkpoints")
            .json()
            .get("data")
            .get(0)
            .get("metrics");
    assertEquals(9.0 / 6, metrics.get("val/reward").asDouble(), 1e-12);
    assertEquals(15.0, metrics.get("train/reward").asDouble(), 1e-12);
    assertEquals(5.0, metrics.get("train/reward_std_dev").asDouble(), 1e-12);

    PreviewClient.Reply latest =
        client.delete("/v1/preview/models/" + id + "/checkpoints", "{\"steps\":[0]}");
    assertEquals(400, latest.status(), latest.body());
    PreviewClient.Reply none =
        client.delete("/v1/preview/models/" + id + "/checkpoints", "{\"steps\":[7,8]}");
    assertEquals(200, none.status(), none.body());
    assertEquals(0, none.json().get("deleted_count").asInt());
    assertEquals("[7,8]", none.json().get("not_found_steps").toString());
    assertEquals(
        Set.of("body.steps.1:int_type"),
        locs(
            client
                .delete("/v1/preview/models/" + id + "/checkpoints", "{\"steps\":[1,\"x\"]}")
                .json()));
    assertEquals(
        404,
        client
            .delete("/v1/preview/models/" + UUID.randomUUID() + "/checkpoints", "{\"steps\":[1]}")
            .status());
    assertEquals(
        Set.of("query.order:enum"),
        locs(client.get("/v1/preview/models/" + id + "/checkpoints?order=up").json()));
    assertEquals(
        404, client.get("/v1/preview/models/" + UUID.randomUUID() + "/checkpoints").status());
  }

  @Test
  void logValidationListsEveryProblem() {
    String id = client.createModel("bad-" + UUID.randomUUID());
    String body =
        "{\"split\":7,\"model_id\":\""
            + UUID.randomUUID()
            + "\",\"trajectory_groups\":["
            + "{\"trajectories\":[{\"messages_and_choices\":[{\"content\":\"no role\"}]},"
            + "{\"messages_and_choices\":[],\"reward\":\"abc\",\"start_time\":\"yesterday\"},"
            + "{\"messages_and_choices\":[],\"reward\":NaN,\"metrics\":{\"m\":\"x\"}},"
            + "{\"messages_and_choices\":{},\"reward\":1e999,\"logs\":[1]}]},"
            + "{\"no_trajectories\":true},5,"
            + "{\"trajectories\":[{\"messages_and_choices\":[],\"reward\":1,\"start_time\":\"2025-01-02T03:04:05Z\","
            + "\"unknown\":{\"kept\":true}}]}]}";
    PreviewClient.Reply r = client.post("/v1/preview/models/" + id + "/log", body);
    assertEquals(422, r.status(), r.body());
    assertEquals(
        Set.of(
            "body.split:string_type",
            "body.trajectory_groups.0.trajectories.0.messages_and_choices.0.role:missing",
            "body.trajectory_groups.0.trajectories.0.reward:missing",
            "body.trajectory_groups.0.trajectories.1.reward:float_parsing",
            "body.trajectory_groups.0.trajectories.1.start_time:datetime_parsing",
            "body.trajectory_groups.0.trajectories.2.reward:finite_number",
            "body.trajectory_groups.0.trajectories.2.metrics.m:float_type",
            "body.trajectory_groups.0.trajectories.3.messages_and_choices:list_type",
            "body.trajectory_groups.0.trajectories.3.reward:finite_number",
            "body.trajectory_groups.0.trajectories.3.logs.0:string_type",
            "body.trajectory_groups.1.trajectories:missing",
            "body.trajectory_groups.2:model_attributes_type",
            "body.model_id:value_error"),
        locs(r.json()));
    // loc holds integers for list indexes, as FastAPI writes it.
    JsonNode first = r.json().get("detail").get(1).get("loc");
    assertTrue(first.get(2).isInt(), first.toString());

    assertEquals(
        Set.of("body.split:missing", "body.trajectory_groups:missing"),
        locs(client.post("/v1/preview/models/" + id + "/log", "{}").json()));
    assertEquals(
        Set.of("body.trajectory_groups:list_type"),
        locs(
            client
                .post(
                    "/v1/preview/models/" + id + "/log",
                    "{\"split\":\"val\",\"trajectory_groups\":{}}")
                .json()));
    PreviewClient.Reply malformed =
        client.post("/v1/preview/models/" + id + "/log", "{\"split\":\"val\",");
    assertEquals(422, malformed.status());
    assertEquals("json_invalid", malformed.json().get("detail").get(0).get("type").asText());
    assertEquals(
        404,
        client
            .post("/v1/preview/models/" + UUID.randomUUID() + "/log", logBody("val", group(1)))
            .status());
    assertEquals(
        404, client.post("/v1/preview/models/nope/log", logBody("val", group(1))).status());
    // Nothing from the failed requests was stored.
    assertEquals(0, client.allGroups(id, null).size());
  }

  @Test
  void idempotencyKeyStoresARetriedPostOnce() {
    String id = client.createModel("idem-" + UUID.randomUUID());
    String body = logBody("train", group(1, 2), group(3));
    PreviewClient.Reply first = client.post("/v1/preview/models/" + id + "/log", body, "key-1");
    PreviewClient.Reply retry = client.post("/v1/preview/models/" + id + "/log", body, "key-1");
    assertEquals(200, retry.status());
    assertFalse(first.json().get("duplicate").asBoolean());
    assertTrue(retry.json().get("duplicate").asBoolean());
    assertEquals(2, client.allGroups(id, null).size());
    client.post("/v1/preview/models/" + id + "/log", body, "key-2");
    client.post("/v1/preview/models/" + id + "/log", body);
    client.post("/v1/preview/models/" + id + "/log", body);
    assertEquals(8, client.allGroups(id, null).size());
  }

  @Test
  void readBackInPagesAndExportAsJsonLines() throws Exception {
    String id = client.createModel("read-" + UUID.randomUUID());
    List<String> groups = new ArrayList<>();
    for (int i = 0; i < 7; i++) groups.add(group(i, i + 1));
    client.post(
        "/v1/preview/models/" + id + "/log",
        logBody("val", groups.subList(0, 5).toArray(String[]::new)));
    client.post(
        "/v1/preview/models/" + id + "/log",
        logBody("train", groups.subList(5, 7).toArray(String[]::new)));

    PreviewClient.Reply page =
        client.get("/v1/preview/models/" + id + "/trajectories?split=val&limit=2");
    assertEquals(200, page.status(), page.body());
    assertTrue(page.json().get("has_more").asBoolean());
    assertEquals(2, page.json().get("data").size());
    List<JsonNode> val = client.allGroups(id, "val");
    assertEquals(5, val.size());
    assertEquals(2, client.allGroups(id, "train").size());
    assertEquals(7, client.allGroups(id, null).size());
    JsonNode g0 = val.get(0);
    assertEquals("val", g0.get("split").asText());
    assertEquals(0, g0.get("step").asLong());
    assertEquals(Json.mapper().readTree(groups.get(0)).get("trajectories"), g0.get("trajectories"));
    assertEquals("kept", g0.get("trajectories").get(0).get("extra_field").asText());
    assertEquals(
        Set.of("query.after:value_error"),
        locs(client.get("/v1/preview/models/" + id + "/trajectories?after=zzz").json()));
    assertEquals(
        404, client.get("/v1/preview/models/" + UUID.randomUUID() + "/trajectories").status());

    PreviewClient.Reply export = client.get("/v1/preview/models/" + id + "/trajectories/export");
    assertEquals(200, export.status());
    String[] lines = export.body().split("\n");
    assertEquals(7, lines.length);
    for (int i = 0; i < 7; i++) {
      JsonNode line = Json.mapper().readTree(lines[i]);
      assertEquals(
          Json.mapper().readTree(groups.get(i)).get("trajectories"), line.get("trajectories"));
    }
    String valOnly =
        client.get("/v1/preview/models/" + id + "/trajectories/export?split=val").body();
    assertEquals(5, valOnly.split("\n").length);
  }

  @Test
  void bodiesBeyondTheLimitAre413() throws Exception {
    String id = client.createModel("big-" + UUID.randomUUID());
    byte[] big =
        logBody("val", "\"" + "x".repeat((int) BODY_LIMIT) + "\"").getBytes(StandardCharsets.UTF_8);
    assertEquals(413, postBytesOverTheLimit("/v1/preview/models/" + id + "/log", big).status());
    // Chunked, so the limit is only found while streaming the body.
    HttpResponse<String> chunked = postChunked("/v1/preview/models/" + id + "/log", big);
    assertEquals(413, chunked.statusCode(), chunked.body());
    assertTrue(chunked.body().contains("limit"), chunked.body());
    // Just below the limit is fine.
    StringBuilder many = new StringBuilder();
    String g = group(0.5, 0.25);
    int n = 0;
    while (many.length() + g.length() < BODY_LIMIT - 1024) {
      if (n++ > 0) many.append(',');
      many.append(g);
    }
    PreviewClient.Reply ok =
        client.post("/v1/preview/models/" + id + "/log", logBody("val", many.toString()));
    assertEquals(200, ok.status(), ok.body());
    assertEquals(n, ok.json().get("num_groups").asInt());
  }

  /**
   * POSTs a body with its Content-Length over the limit. The server answers 413 at once and closes;
   * a client still writing may see the connection reset before it reads the answer (the same
   * transport race as below), so only an I/O failure is retried, never a status.
   */
  private PreviewClient.Reply postBytesOverTheLimit(String path, byte[] body) {
    java.io.UncheckedIOException last = null;
    for (int attempt = 0; attempt < 5; attempt++) {
      try {
        return client.postBytes(path, body);
      } catch (java.io.UncheckedIOException e) {
        last = e;
      }
    }
    throw last;
  }

  /**
   * POSTs a chunked body. The server answers 413 mid-body and closes the connection; when the
   * client is still writing, the kernel may reset the connection before the client reads the answer
   * (a transport race every HTTP/1.1 client faces), so only an I/O failure is retried, never a
   * status.
   */
  private HttpResponse<String> postChunked(String path, byte[] body) throws Exception {
    java.io.IOException last = null;
    for (int attempt = 0; attempt < 5; attempt++) {
      try {
        return HttpClient.newHttpClient()
            .send(
                HttpRequest.newBuilder(URI.create(node.baseUrl() + path))
                    .header("Authorization", "Bearer " + PreviewNode.KEY)
                    .header("Content-Type", "application/json")
                    .POST(
                        HttpRequest.BodyPublishers.ofInputStream(
                            () -> new ByteArrayInputStream(body)))
                    .build(),
                HttpResponse.BodyHandlers.ofString());
      } catch (java.io.IOException e) {
        last = e;
      }
    }
    throw last;
  }

  @Test
  void everythingSurvivesARestart() {
    String id = client.createModel("restart-" + UUID.randomUUID());
    client.post(
        "/v1/preview/models/" + id + "/log", logBody("val", group(1, 2), group(3)), "restart-key");
    String before = client.get("/v1/preview/models/" + id + "/checkpoints").body();
    node.close();
    node = PreviewNode.start(settings(), null, BODY_LIMIT);
    client = new PreviewClient(node.baseUrl(), PreviewNode.KEY);
    assertEquals(200, client.get("/v1/preview/models/" + id).status());
    assertEquals(before, client.get("/v1/preview/models/" + id + "/checkpoints").body());
    assertEquals(2, client.allGroups(id, "val").size());
    // The idempotency key is remembered across the restart, and new groups follow the old ones.
    PreviewClient.Reply retry =
        client.post(
            "/v1/preview/models/" + id + "/log",
            logBody("val", group(1, 2), group(3)),
            "restart-key");
    assertTrue(retry.json().get("duplicate").asBoolean());
    client.post("/v1/preview/models/" + id + "/log", logBody("val", group(9)));
    List<JsonNode> all = client.allGroups(id, null);
    assertEquals(3, all.size());
    assertEquals(9.0, all.get(2).get("trajectories").get(0).get("reward").asDouble());
  }

  /** {@code loc joined by dots : type} of every detail entry. */
  static Set<String> locs(JsonNode body) {
    Set<String> out = new HashSet<>();
    for (JsonNode d : body.get("detail")) {
      List<String> parts = new ArrayList<>();
      d.get("loc").forEach(l -> parts.add(l.asText()));
      out.add(String.join(".", parts) + ":" + d.get("type").asText());
    }
    return out;
  }
}
