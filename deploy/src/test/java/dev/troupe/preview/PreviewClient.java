package dev.troupe.preview;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.protocol.Json;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/** A tiny JSON client over java.net.http for the preview API. */
final class PreviewClient {
  record Reply(int status, String body) {
    JsonNode json() {
      try {
        return Json.mapper().readTree(body);
      } catch (IOException e) {
        throw new UncheckedIOException("not JSON: " + body, e);
      }
    }
  }

  private final HttpClient http =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
  private final String base;
  private final String key;

  PreviewClient(String base, String key) {
    this.base = base;
    this.key = key;
  }

  Reply get(String path) {
    return send(builder(path).GET().build());
  }

  Reply post(String path, String json) {
    return post(path, json, null);
  }

  Reply post(String path, String json, String idempotencyKey) {
    HttpRequest.Builder b =
        builder(path)
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(json));
    if (idempotencyKey != null) b.header("Idempotency-Key", idempotencyKey);
    return send(b.build());
  }

  Reply postBytes(String path, byte[] json) {
    return send(
        builder(path)
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofByteArray(json))
            .build());
  }

  Reply delete(String path, String json) {
    HttpRequest.Builder b = builder(path);
    if (json == null) b.DELETE();
    else
      b.header("Content-Type", "application/json")
          .method("DELETE", HttpRequest.BodyPublishers.ofString(json));
    return send(b.build());
  }

  /** Creates (or returns) a model and gives its id. */
  String createModel(String name) {
    Reply r =
        post(
            "/v1/preview/models",
            "{\"project\":\"p\",\"name\":\""
                + name
                + "\",\"base_model\":\""
                + PreviewNode.BASE_MODEL
                + "\",\"return_existing\":true}");
    if (r.status() != 200) throw new IllegalStateException("create failed: " + r);
    return r.json().get("id").asText();
  }

  /** All groups of a model through the cursor pages. */
  List<JsonNode> allGroups(String modelId, String split) {
    List<JsonNode> out = new ArrayList<>();
    String after = null;
    while (true) {
      String q =
          "?limit=100"
              + (split == null ? "" : "&split=" + split)
              + (after == null ? "" : "&after=" + after);
      Reply r = get("/v1/preview/models/" + modelId + "/trajectories" + q);
      if (r.status() != 200) throw new IllegalStateException("read failed: " + r);
      JsonNode page = r.json();
      page.get("data").forEach(out::add);
      if (!page.get("has_more").asBoolean()) return out;
      after = page.get("last_id").asText();
    }
  }

  private HttpRequest.Builder builder(String path) {
    HttpRequest.Builder b =
        HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(120));
    if (key != null) b.header("Authorization", "Bearer " + key);
    return b;
  }

  private Reply send(HttpRequest request) {
    try {
      HttpResponse<String> r = http.send(request, HttpResponse.BodyHandlers.ofString());
      return new Reply(r.statusCode(), r.body());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }
}
