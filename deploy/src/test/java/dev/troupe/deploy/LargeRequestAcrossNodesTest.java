package dev.troupe.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
 * A generation request larger than Artery's ordinary frame (256 KiB) served by a model worker on
 * another node: a gateway-only node and a worker node of the real distribution on loopback. The
 * request's {@code Generate} crosses the cluster in the large-message lane; one over every bound is
 * refused by the gateway before it is sent, at once, instead of being dropped by Artery.
 */
class LargeRequestAcrossNodesTest {
  private static final Duration WAIT = Duration.ofSeconds(90);
  private static final Config TEST =
      ConfigFactory.parseString(
          """
          troupe.worker.engine.num-blocks = 32
          # A smaller large-message frame than production's, so that a request over it stays small.
          pekko.remote.artery.advanced.maximum-large-frame-size = 2MiB
          """);

  private final LoopbackNodes nodes = new LoopbackNodes(TEST, "sk-big");
  private final HttpClient http = HttpClient.newHttpClient();

  @AfterEach
  void stopAll() {
    nodes.close();
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

  /** {@code allowed_token_ids} of {@code n} ids (repeating the first 200 of the vocabulary). */
  private static String allowed(int n) {
    StringBuilder ids = new StringBuilder();
    for (int i = 0; i < n; i++) ids.append(i == 0 ? "" : ",").append(i % 200);
    return ids.toString();
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

  @Test
  void aRequestLargerThanAnOrdinaryFrameIsServedOnAnotherNode(@TempDir Path dir) throws Exception {
    TroupeNode gateway = gatewayAndWorker(dir);

    // 262,144 allowed ids (the limit): about 600 KB as the worker's CBOR message.
    String body =
        """
        {"model":"demo","prompt":"Hello","max_tokens":3,"temperature":0,"ignore_eos":true,
         "allowed_token_ids":[%s]}"""
            .formatted(allowed(262_144));
    long start = System.nanoTime();
    HttpResponse<String> r = post(gateway, "/v1/completions", body);
    long seconds = (System.nanoTime() - start) / 1_000_000_000L;
    assertEquals(200, r.statusCode(), "after " + seconds + " s: " + r.body());
    assertTrue(r.body().contains("\"completion_tokens\":3"), r.body());
  }

  @Test
  void aRequestLargerThanEveryFrameIsA400AtTheGateway(@TempDir Path dir) throws Exception {
    TroupeNode gateway = gatewayAndWorker(dir);
    // A 3 MB prompt: over the 2 MiB large-message frame of this test's nodes.
    String body =
        """
        {"model":"demo","prompt":"%s","max_tokens":1}"""
            .formatted("hello ".repeat(500_000));
    HttpResponse<String> r = post(gateway, "/v1/completions", body);
    assertEquals(400, r.statusCode(), r.body());
    assertTrue(r.body().contains("maximum-large-frame-size"), r.body());
  }
}
