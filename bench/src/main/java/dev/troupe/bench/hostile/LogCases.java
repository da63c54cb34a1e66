package dev.troupe.bench.hostile;

import static dev.troupe.bench.hostile.Case.any;
import static dev.troupe.bench.hostile.Case.ok;
import static dev.troupe.bench.hostile.Case.refused;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Abuse of the trajectory log and the other preview endpoints, and the record of every write the
 * node acknowledged, read back after the node is killed and restarted.
 */
final class LogCases {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** Markers whose write was answered 200, and markers whose write was refused. */
  final Set<String> acknowledged = ConcurrentHashMap.newKeySet();

  final Set<String> refusedMarkers = ConcurrentHashMap.newKeySet();
  private String modelId;

  /** Creates the model the cases log to. */
  void setUp(Target t) throws Exception {
    Reply r =
        t.post(
            "/v1/preview/models",
            "{\"project\":\"hostile\",\"name\":\"log\",\"base_model\":\""
                + t.model
                + "\",\"return_existing\":true}");
    if (r.status() != 200) throw new IllegalStateException("cannot create the model: " + r);
    modelId = JSON.readTree(r.body()).get("id").asText();
  }

  static String group(String content, String extra) {
    return "{\"trajectories\":[{\"messages_and_choices\":[{\"role\":\"user\",\"content\":\""
        + content
        + "\"}],\"reward\":1"
        + extra
        + "}]}";
  }

  static String body(String split, String... groups) {
    return "{\"split\":\"" + split + "\",\"trajectory_groups\":[" + String.join(",", groups) + "]}";
  }

  private String path() {
    return "/v1/preview/models/" + modelId + "/log";
  }

  /** A write of {@code marker}, counted as acknowledged or refused by its answer. */
  private Case.Action write(String marker, String body) {
    return t -> {
      Reply r = t.post(path(), body);
      (r.status() == 200 ? acknowledged : refusedMarkers).add(marker);
      return r;
    };
  }

  List<Case> all() {
    String f = "log abuse";
    List<Case> c = new ArrayList<>();
    for (int i = 0; i < 40; i++) {
      String m = "marker-" + i;
      c.add(ok(f, "write " + m, write(m, body("val", group(m, "")))));
    }
    c.add(
        ok(
            f,
            "a 20 MB group",
            write(
                "marker-big",
                body(
                    "val",
                    group("marker-big", ",\"logs\":[\"" + "y".repeat(20_000_000) + "\"]")))));
    for (int i = 0; i < 3; i++)
      c.add(
          ok(
              f,
              "the same Idempotency-Key, attempt " + i,
              t -> {
                Reply r =
                    t.send(
                        "POST",
                        path(),
                        Map.of(
                            "Content-Type",
                            "application/json",
                            "Authorization",
                            t.bearer(),
                            "Idempotency-Key",
                            "same-key"),
                        body("val", group("marker-idem", ""))
                            .getBytes(java.nio.charset.StandardCharsets.UTF_8));
                if (r.status() == 200) acknowledged.add("marker-idem");
                return r;
              }));
    String one = group("refused-x", "");
    c.add(
        refused(
            f,
            "10,001 groups",
            write(
                "refused-x",
                body("val", java.util.Collections.nCopies(10_001, one).toArray(new String[0])))));
    c.add(
        refused(
            f,
            "100,000 groups",
            write(
                "refused-x",
                body("val", java.util.Collections.nCopies(100_000, one).toArray(new String[0])))));
    for (String tail : new String[] {"}}}}", " {}", "x", "]"})
      c.add(
          refused(
              f,
              "trailing " + tail,
              write("refused-t", body("val", group("refused-t", "")) + tail)));
    String[][] bad = {
      {"split \\ud800", body("v\\ud800", group("refused-s", ""))},
      {"content \\udc00", body("val", group("refused-s\\udc00", ""))},
      {"metadata key \\ud800", body("val", group("refused-s", ",\"metadata\":{\"k\\ud800\":1}"))},
      {"metrics key \\ud800", body("val", group("refused-s", ",\"metrics\":{\"k\\ud800\":1}"))},
      {"reward NaN", body("val", group("refused-r", "").replace("\"reward\":1", "\"reward\":NaN"))},
      {
        "reward Infinity",
        body("val", group("refused-r", "").replace("\"reward\":1", "\"reward\":Infinity"))
      },
      {
        "reward \"abc\"",
        body("val", group("refused-r", "").replace("\"reward\":1", "\"reward\":\"abc\""))
      },
      {
        "reward 1e400",
        body("val", group("refused-r", "").replace("\"reward\":1", "\"reward\":1e400"))
      },
      {
        "metadata nested 10,000 deep",
        body(
            "val",
            group(
                "refused-d",
                ",\"metadata\":" + "{\"a\":".repeat(10_000) + "1" + "}".repeat(10_000)))
      },
      {
        "a 100,000-digit reward",
        body(
            "val",
            group("refused-n", "").replace("\"reward\":1", "\"reward\":" + "7".repeat(100_000)))
      },
      {"no split", "{\"trajectory_groups\":[" + group("refused-m", "") + "]}"},
      {"groups not a list", "{\"split\":\"val\",\"trajectory_groups\":{}}"},
      {
        "model_id mismatch",
        "{\"model_id\":\"other\",\"split\":\"val\",\"trajectory_groups\":["
            + group("refused-m", "")
            + "]}"
      },
    };
    for (String[] b : bad) c.add(refused(f, b[0], write("refused", b[1])));
    c.add(
        refused(
            f,
            "Idempotency-Key of 256 characters",
            t ->
                t.send(
                    "POST",
                    path(),
                    Map.of(
                        "Content-Type",
                        "application/json",
                        "Authorization",
                        t.bearer(),
                        "Idempotency-Key",
                        "k".repeat(256)),
                    body("val", group("refused-k", ""))
                        .getBytes(java.nio.charset.StandardCharsets.UTF_8))));
    c.add(
        refused(
            f,
            "an unknown model",
            t ->
                t.post(
                    "/v1/preview/models/00000000-0000-0000-0000-000000000000/log",
                    body("val", group("refused-u", "")))));
    c.add(
        refused(
            f,
            "a model id that is no UUID",
            t ->
                t.post("/v1/preview/models/..%2F..%2Fx/log", body("val", group("refused-u", "")))));
    c.add(
        refused(
            f,
            "no content type",
            t ->
                t.send(
                    "POST",
                    path(),
                    Map.of("Authorization", t.bearer()),
                    body("val", group("refused-c", ""))
                        .getBytes(java.nio.charset.StandardCharsets.UTF_8))));
    for (String field : new String[] {"project", "name", "entity"})
      c.add(
          refused(
              f,
              "model " + field + " with a lone surrogate",
              t ->
                  t.post(
                      "/v1/preview/models",
                      "{\"project\":\"p\",\"name\":\"n\",\"base_model\":\""
                          + t.model
                          + "\",\""
                          + field
                          + "\":\"x\\ud800\"}")));
    c.add(
        refused(
            f,
            "a training job with a lone surrogate",
            t ->
                t.post(
                    "/v1/preview/training-jobs",
                    "{\"model_id\":\""
                        + modelId
                        + "\",\"trajectory_groups\":["
                        + group("x\\ud800", "")
                        + "]}")));
    c.add(
        refused(
            f,
            "a training job of 10,001 groups",
            t ->
                t.post(
                    "/v1/preview/training-jobs",
                    "{\"model_id\":\""
                        + modelId
                        + "\",\"trajectory_groups\":["
                        + String.join(",", java.util.Collections.nCopies(10_001, group("x", "")))
                        + "]}")));
    c.add(
        refused(
            f,
            "trajectories limit 101",
            t -> t.get("/v1/preview/models/" + modelId + "/trajectories?limit=101")));
    c.add(
        refused(
            f,
            "delete checkpoints [\"x\"]",
            t ->
                t.send(
                    "DELETE",
                    "/v1/preview/models/" + modelId + "/checkpoints",
                    Map.of("Content-Type", "application/json", "Authorization", t.bearer()),
                    "{\"steps\":[\"x\"]}".getBytes(java.nio.charset.StandardCharsets.UTF_8))));
    c.add(
        any(
            f,
            "export with a NUL split",
            t -> t.get("/v1/preview/models/" + modelId + "/trajectories/export?split=%00")));
    return c;
  }

  /**
   * Reads every stored group back and returns what is wrong: acknowledged markers missing or stored
   * twice, refused markers stored.
   */
  List<String> lost(Target t) throws Exception {
    Map<String, Integer> stored = new HashMap<>();
    String after = null;
    while (true) {
      JsonNode page = JSON.readTree(fullBody(t, after));
      for (JsonNode g : page.get("data")) {
        JsonNode group = g.has("trajectories") ? g : g.path("group");
        String content =
            group
                .path("trajectories")
                .path(0)
                .path("messages_and_choices")
                .path(0)
                .path("content")
                .asText();
        stored.merge(content, 1, Integer::sum);
      }
      if (!page.path("has_more").asBoolean()) break;
      after = page.path("last_id").asText();
    }
    List<String> wrong = new ArrayList<>();
    for (String m : acknowledged) {
      int n = stored.getOrDefault(m, 0);
      if (n != 1) wrong.add(m + " acknowledged, stored " + n + " times");
    }
    for (String m : refusedMarkers)
      if (!acknowledged.contains(m) && stored.containsKey(m)) wrong.add(m + " refused but stored");
    return wrong;
  }

  private String fullBody(Target t, String after) throws Exception {
    java.net.http.HttpResponse<String> r =
        java.net.http.HttpClient.newHttpClient()
            .send(
                java.net.http.HttpRequest.newBuilder(
                        java.net.URI.create(
                            t.base()
                                + "/v1/preview/models/"
                                + modelId
                                + "/trajectories?limit=100"
                                + (after == null ? "" : "&after=" + after)))
                    .header("Authorization", t.bearer())
                    .build(),
                java.net.http.HttpResponse.BodyHandlers.ofString());
    if (r.statusCode() != 200)
      throw new IllegalStateException("cannot read the log: " + r.statusCode() + " " + r.body());
    return r.body();
  }
}
