package dev.troupe.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A worker's reply larger than Artery's largest frame, to a gateway on another node: a gateway-only
 * node and a worker node of the real distribution on loopback, with a 2 MiB large-message frame.
 * Prompt logprobs of a 3,000-token prompt with 20 alternatives are over that frame as the first
 * update's message, which Artery dropped with only a warning on the worker's log (the answer was a
 * 200 without {@code prompt_logprobs}); the worker now sends it in parts. A {@code /tokenize} whose
 * request or answer is over the frame (an answer with {@code return_token_strs} is several times
 * its request) waited 30 s for its ask to time out and answered a 5xx; it is now a 400 at once,
 * from the gateway or from the worker, naming the limit.
 */
class LargeReplyAcrossNodesTest {
  private static final Duration WAIT = Duration.ofSeconds(120);
  private static final Config TEST =
      ConfigFactory.parseString(
          """
          troupe.worker.engine.num-blocks = 256
          # A smaller large-message frame than production's, so that a reply over it stays small.
          pekko.remote.artery.advanced.maximum-large-frame-size = 2MiB
          """);

  private final LoopbackNodes nodes = new LoopbackNodes(TEST, "sk-big");
  private final HttpClient http = HttpClient.newHttpClient();

  @AfterEach
  void stopAll() {
    nodes.close();
  }

  private TroupeNode gatewayAndWorker(Path dir) throws Exception {
    TroupeNode gateway = nodes.start(dir.resolve("g"), "gateway", null);
    nodes.start(dir.resolve("w"), "worker", "127.0.0.1:" + gateway.address().getPort().get());
    ActorTestKit.create(gateway.system())
        .createTestProbe()
        .awaitAssert(
            WAIT,
            () -> {
              long up = 0;
              for (var m : Cluster.get(gateway.system()).state().getMembers())
                if (m.status() == MemberStatus.up()) up++;
              assertEquals(2, up);
              return null;
            });
    return gateway;
  }

  private HttpResponse<String> post(TroupeNode node, String path, String body) throws Exception {
    return http.send(
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + node.httpPort() + path))
            .header("Content-Type", "application/json")
            .header("Authorization", "Bearer sk-big")
            .POST(HttpRequest.BodyPublishers.ofString(body))
            .timeout(WAIT)
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void promptLogprobsLargerThanEveryFrameAreAnswered(@TempDir Path dir) throws Exception {
    TroupeNode gateway = gatewayAndWorker(dir);
    String body =
        """
        {"model":"demo","prompt":"%s","max_tokens":2,"temperature":0,"ignore_eos":true,
         "prompt_logprobs":20}"""
            .formatted("hello ".repeat(3_000));
    HttpResponse<String> r = post(gateway, "/v1/completions", body);
    assertEquals(200, r.statusCode(), r.body());
    JsonNode json = new ObjectMapper().readTree(r.body());
    int promptTokens = json.path("usage").path("prompt_tokens").asInt();
    JsonNode logprobs = json.path("choices").path(0).path("prompt_logprobs");
    assertTrue(promptTokens >= 3_000, r.body().substring(0, 300));
    assertEquals(promptTokens, logprobs.size());
    assertTrue(logprobs.get(0).isNull());
    // each later token: its own entry and 20 alternatives (21 when the token is not among them)
    assertTrue(
        logprobs.get(promptTokens - 1).size() >= 20, logprobs.get(promptTokens - 1).toString());
    assertEquals(2, json.path("usage").path("completion_tokens").asInt());
  }

  @Test
  void aTokenizeOverTheFrameEitherWayIsA400NamingTheLimit(@TempDir Path dir) throws Exception {
    TroupeNode gateway = gatewayAndWorker(dir);
    // the answer: ~400,000 tokens and their strings, over 2 MiB; the request, 0.8 MB, is not
    long start = System.nanoTime();
    HttpResponse<String> answer =
        post(
            gateway,
            "/tokenize",
            """
            {"model":"demo","prompt":"%s","return_token_strs":true}"""
                .formatted("a ".repeat(400_000)));
    assertEquals(400, answer.statusCode(), answer.body().substring(0, 200));
    assertTrue(answer.body().contains("from the model worker"), answer.body());
    assertTrue(answer.body().contains("maximum-large-frame-size"), answer.body());
    assertTrue(
        Duration.ofNanos(System.nanoTime() - start).compareTo(Duration.ofSeconds(20)) < 0,
        "answered before the ask's 30 s timeout");
    // the same text without the strings fits both ways
    HttpResponse<String> ids =
        post(
            gateway,
            "/tokenize",
            """
            {"model":"demo","prompt":"%s"}"""
                .formatted("a ".repeat(400_000)));
    assertEquals(200, ids.statusCode(), ids.body().substring(0, 200));
    assertTrue(new ObjectMapper().readTree(ids.body()).path("count").asInt() >= 400_000);
    // the request itself over the bound (the frame less 1 MiB): refused before it is sent
    for (String[] call :
        new String[][] {
          {"/tokenize", "{\"model\":\"demo\",\"prompt\":\"" + "a ".repeat(600_000) + "\"}"},
          {"/detokenize", "{\"model\":\"demo\",\"tokens\":[" + "264,".repeat(500_000) + "264]}"}
        }) {
      HttpResponse<String> r = post(gateway, call[0], call[1]);
      assertEquals(400, r.statusCode(), call[0] + ": " + r.body());
      assertTrue(r.body().contains("as a message to a model worker"), r.body());
    }
  }
}
