package dev.troupe.training;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.typesafe.config.ConfigFactory;
import dev.troupe.deploy.LaunchOptions;
import dev.troupe.deploy.TroupeNode;
import dev.troupe.protocol.Json;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The ART client flow over HTTP on one `troupe serve` node with the demo model: create a model,
 * roll out, train one step, then chat with the trained checkpoint by every naming form. The same
 * seeded request gives other logprobs on step 1 than on the base model, step 0 equals the base, the
 * response reports the served step in {@code system_fingerprint} and echoes the client's {@code
 * model}, and an unknown model or step is a 404 naming {@code model}.
 */
class TrainedModelServingTest {
  private static final String KEY = "sk-serving";
  @TempDir Path dir;
  final HttpClient http = HttpClient.newHttpClient();

  HttpResponse<String> send(int port, String method, String path, String body) throws Exception {
    HttpRequest.Builder b =
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
            .timeout(Duration.ofMinutes(3))
            .header("Authorization", "Bearer " + KEY);
    if (body != null)
      b.header("Content-Type", "application/json")
          .method(method, HttpRequest.BodyPublishers.ofString(body));
    else b.method(method, HttpRequest.BodyPublishers.noBody());
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  JsonNode call(int port, String method, String path, String body, int expect) throws Exception {
    HttpResponse<String> r = send(port, method, path, body);
    assertEquals(expect, r.statusCode(), method + " " + path + ": " + r.body());
    return Json.mapper().readTree(r.body());
  }

  static String chat(String model, boolean stream) {
    ObjectNode chat =
        Json.mapper()
            .createObjectNode()
            .put("model", model)
            .put("n", 2)
            .put("max_tokens", 4)
            .put("logprobs", true)
            .put("seed", 7)
            .put("stream", stream);
    chat.putArray("messages").addObject().put("role", "user").put("content", "Say a number.");
    return chat.toString();
  }

  /** Every choice's sampled-token logprobs, in order. */
  static List<Double> logprobs(JsonNode completion) {
    List<Double> out = new ArrayList<>();
    for (JsonNode c : completion.get("choices"))
      for (JsonNode t : c.get("logprobs").get("content")) out.add(t.get("logprob").asDouble());
    return out;
  }

  static double maxDiff(List<Double> a, List<Double> b) {
    assertEquals(a.size(), b.size());
    double d = 0;
    for (int i = 0; i < a.size(); i++) d = Math.max(d, Math.abs(a.get(i) - b.get(i)));
    return d;
  }

  @Test
  void chatWithTheTrainedCheckpoint() throws Exception {
    LaunchOptions o =
        LaunchOptions.parse(
            List.of(
                "--port",
                "0",
                "--cluster-port",
                "0",
                "--management-port",
                "-1",
                "--api-key",
                KEY,
                "--data-dir",
                dir.toString()),
            null);
    try (TroupeNode node =
        TroupeNode.start(
            o,
            ConfigFactory.parseString(
                "pekko.coordinated-shutdown.exit-jvm = off\npekko.coordinated-shutdown.run-by-jvm-shutdown-hook = off\npekko.loglevel = WARNING"),
            k -> {})) {
      int port = node.httpPort();
      JsonNode created =
          call(
              port,
              "POST",
              "/v1/preview/models",
              "{\"project\":\"p\",\"name\":\"served\",\"base_model\":\"demo\"}",
              200);
      String model = created.get("id").asText();
      String named = created.get("entity").asText() + "/p/served";

      JsonNode base = call(port, "POST", "/v1/chat/completions", chat("demo", false), 200);
      assertEquals("demo", base.get("model").asText());
      assertTrue(base.get("system_fingerprint").isNull(), base.toString());
      // Before training the model's latest step is 0: the base model itself.
      JsonNode zero = call(port, "POST", "/v1/chat/completions", chat(model, false), 200);
      assertEquals(model + ":step0", zero.get("system_fingerprint").asText());
      assertEquals(model, zero.get("model").asText());
      assertEquals(0.0, maxDiff(logprobs(base), logprobs(zero)), 1e-6);

      train(port, model, base);

      JsonNode step1 =
          call(port, "POST", "/v1/chat/completions", chat(model + ":step1", false), 200);
      assertEquals(model + ":step1", step1.get("system_fingerprint").asText());
      assertEquals(model + ":step1", step1.get("model").asText());
      assertTrue(
          maxDiff(logprobs(base), logprobs(step1)) > 1e-3,
          "step 1 must change the model: " + logprobs(base) + " vs " + logprobs(step1));
      JsonNode latest = call(port, "POST", "/v1/chat/completions", chat(model, false), 200);
      assertEquals(model + ":step1", latest.get("system_fingerprint").asText());
      assertEquals(0.0, maxDiff(logprobs(step1), logprobs(latest)), 1e-5);
      JsonNode byName =
          call(port, "POST", "/v1/chat/completions", chat(named + ":step1", false), 200);
      assertEquals(model + ":step1", byName.get("system_fingerprint").asText());
      assertEquals(named + ":step1", byName.get("model").asText());
      JsonNode oldStep =
          call(port, "POST", "/v1/chat/completions", chat(named + ":step0", false), 200);
      assertEquals(0.0, maxDiff(logprobs(base), logprobs(oldStep)), 1e-6);

      // Streamed: every chunk names the step.
      HttpResponse<String> sse =
          send(port, "POST", "/v1/chat/completions", chat(model + ":step1", true));
      assertEquals(200, sse.statusCode(), sse.body());
      String firstData =
          sse.body().lines().filter(l -> l.startsWith("data: {")).findFirst().orElseThrow();
      JsonNode chunk = Json.mapper().readTree(firstData.substring(6));
      assertEquals(model + ":step1", chunk.get("system_fingerprint").asText());

      for (String missing :
          List.of(model + ":step2", named + ":step9", "nobody/p/served", "not-a-model")) {
        JsonNode error = call(port, "POST", "/v1/chat/completions", chat(missing, false), 404);
        assertEquals("model", error.get("error").get("param").asText(), error.toString());
        assertTrue(error.get("error").get("message").asText().contains(missing), error.toString());
      }
      assertFalse(logprobs(step1).isEmpty());

      // GET /v1/models lists the trained model after the served ones, as vLLM lists LoRA adapters.
      JsonNode cards = call(port, "GET", "/v1/models", null, 200).get("data");
      assertEquals("demo", cards.get(0).get("id").asText());
      JsonNode card = cards.get(cards.size() - 1);
      assertEquals(model, card.get("id").asText());
      assertEquals("demo", card.get("parent").asText());
      assertEquals(named, card.get("root").asText());
    }
  }

  /** One training job on the base model's rollouts (rewards 1, 0, …), polled to its end. */
  private void train(int port, String model, JsonNode completion) throws Exception {
    ObjectNode body = Json.mapper().createObjectNode().put("model_id", model);
    ArrayNode trajectories =
        body.putArray("trajectory_groups").addObject().putArray("trajectories");
    int i = 0;
    for (JsonNode choice : completion.get("choices")) {
      ObjectNode t = trajectories.addObject().put("reward", i++ % 2);
      ArrayNode mc = t.putArray("messages_and_choices");
      mc.addObject().put("role", "user").put("content", "Say a number.");
      mc.add(choice);
    }
    body.putObject("experimental_config").put("learning_rate", 5e-2);
    String job =
        call(port, "POST", "/v1/preview/training-jobs", body.toString(), 200).get("id").asText();
    String status = null;
    long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(3);
    while (System.nanoTime() < deadline) {
      status =
          call(port, "GET", "/v1/preview/training-jobs/" + job, null, 200).get("status").asText();
      if (status.equals("succeeded") || status.equals("failed")) break;
      Thread.sleep(200);
    }
    assertEquals("succeeded", status);
  }
}
