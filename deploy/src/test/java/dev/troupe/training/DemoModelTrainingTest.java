package dev.troupe.training;

import static org.junit.jupiter.api.Assertions.assertEquals;
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
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The production wiring on one node (`troupe serve` with the demo model): roll out with logprobs
 * through chat completions, train on those very choices, and find the PEFT checkpoint listed and on
 * disk — the demo model's Qwen3 vocabulary, its real chat template and real sampler output.
 */
class DemoModelTrainingTest {
  @TempDir Path dir;
  final HttpClient http = HttpClient.newHttpClient();

  JsonNode call(int port, String method, String path, String body, int expect) throws Exception {
    HttpRequest.Builder b =
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
            .timeout(Duration.ofMinutes(3))
            .header("Authorization", "Bearer sk-demo-training");
    if (body != null)
      b.header("Content-Type", "application/json")
          .method(method, HttpRequest.BodyPublishers.ofString(body));
    else b.method(method, HttpRequest.BodyPublishers.noBody());
    HttpResponse<String> r = http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    assertEquals(expect, r.statusCode(), method + " " + path + ": " + r.body());
    return Json.mapper().readTree(r.body());
  }

  @Test
  void rolloutTrainAndCheckpointOnTheDemoModel() throws Exception {
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
                "sk-demo-training",
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
      String model =
          call(
                  port,
                  "POST",
                  "/v1/preview/models",
                  "{\"project\":\"p\",\"name\":\"demo-rl\",\"base_model\":\"demo\"}",
                  200)
              .get("id")
              .asText();
      ObjectNode chat =
          Json.mapper()
              .createObjectNode()
              .put("model", "demo")
              .put("n", 4)
              .put("max_tokens", 4)
              .put("logprobs", true)
              .put("seed", 1);
      chat.putArray("messages").addObject().put("role", "user").put("content", "Say a number.");
      JsonNode completion = call(port, "POST", "/v1/chat/completions", chat.toString(), 200);
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
      body.putObject("experimental_config").put("learning_rate", 1e-3);
      String job =
          call(port, "POST", "/v1/preview/training-jobs", body.toString(), 200).get("id").asText();

      JsonNode last = null;
      int steps = 0;
      long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(3);
      String after = null;
      while (last == null && System.nanoTime() < deadline) {
        JsonNode page =
            call(
                port,
                "GET",
                "/v1/preview/training-jobs/"
                    + job
                    + "/events"
                    + (after == null ? "" : "?after=" + after),
                null,
                200);
        for (JsonNode e : page.get("data")) {
          after = e.get("id").asText();
          String type = e.get("type").asText();
          if (type.equals("gradient_step")) {
            steps++;
            assertTrue(e.get("data").get("num_trainable_tokens").asDouble() > 0, e.toString());
          }
          if (type.equals("training_ended") || type.equals("training_failed")) last = e;
        }
        if (last == null) Thread.sleep(200);
      }
      assertEquals(
          "training_ended", last == null ? null : last.get("type").asText(), String.valueOf(last));
      assertTrue(steps >= 1);
      JsonNode cp =
          call(
                  port,
                  "GET",
                  "/v1/preview/models/" + model + "/checkpoints?limit=1&order=desc",
                  null,
                  200)
              .get("data")
              .get(0);
      assertEquals(1, cp.get("step").asInt());
      Path ckpt = dir.resolve("checkpoints").resolve(model).resolve("0001");
      assertTrue(Files.isRegularFile(ckpt.resolve("adapter_model.safetensors")), ckpt.toString());
      assertEquals(
          "LORA",
          Json.mapper()
              .readTree(ckpt.resolve("adapter_config.json").toFile())
              .get("peft_type")
              .asText());
    }
  }
}
