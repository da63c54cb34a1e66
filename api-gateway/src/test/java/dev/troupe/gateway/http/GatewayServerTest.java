package dev.troupe.gateway.http;

import static org.apache.pekko.http.javadsl.server.Directives.path;
import static org.apache.pekko.http.javadsl.server.Directives.post;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.protocol.Json;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/** The bound server over real HTTP: the parser's own limits answer in the API's error shape. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class GatewayServerTest {
  private final ActorTestKit testKit = ActorTestKit.create();
  private ServerBinding binding;
  private final HttpClient http =
      HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

  record Body(String text) {}

  @BeforeAll
  void bind() throws Exception {
    GatewaySettings settings =
        GatewaySettings.of(0, List.of("k"))
            .withMaxBodyBytes(1000)
            .withTimeouts(java.time.Duration.ofMillis(500), java.time.Duration.ofSeconds(1));
    var route =
        ApiRoutes.builder(settings)
            .add(
                () ->
                    path(
                        "never",
                        () ->
                            org.apache.pekko.http.javadsl.server.Directives.get(
                                () ->
                                    org.apache.pekko.http.javadsl.server.Directives
                                        .completeWithFuture(
                                            new java.util.concurrent.CompletableFuture<
                                                org.apache.pekko.http.javadsl.model
                                                    .HttpResponse>()))))
            .add(
                () ->
                    path(
                        "echo",
                        () ->
                            post(
                                () ->
                                    JsonBodies.entity(
                                        Body.class,
                                        b ->
                                            JsonBodies.completeJson(
                                                Map.of("len", b.text().length()))))))
            .build();
    binding =
        GatewayServer.bind(testKit.system(), settings, route)
            .toCompletableFuture()
            .get(10, TimeUnit.SECONDS);
  }

  @AfterAll
  void unbind() throws Exception {
    binding
        .terminate(java.time.Duration.ofSeconds(1))
        .toCompletableFuture()
        .get(5, TimeUnit.SECONDS);
    testKit.shutdownTestKit();
  }

  private HttpResponse<String> send(String json) throws Exception {
    return http.send(
        HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + binding.localAddress().getPort() + "/echo"))
            .header("Content-Type", "application/json")
            .header("Authorization", "Bearer k")
            .POST(HttpRequest.BodyPublishers.ofString(json))
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void aBodyUnderTheLimitIsServed() throws Exception {
    HttpResponse<String> r = send("{\"text\":\"" + "a".repeat(500) + "\"}");
    assertEquals(200, r.statusCode(), r.body());
    assertEquals("{\"len\":500}", r.body());
    assertTrue(r.headers().firstValue("X-Request-Id").isPresent());
  }

  @Test
  void aDeclaredLengthOverTheLimitIs413InTheApiShape() throws Exception {
    HttpResponse<String> r = send("{\"text\":\"" + "a".repeat(5000) + "\"}");
    assertEquals(413, r.statusCode(), r.body());
    JsonNode error = Json.mapper().readTree(r.body()).path("error");
    assertEquals("PayloadTooLargeError", error.path("type").asText(), r.body());
    assertEquals(413, error.path("code").asInt());
    assertTrue(error.path("message").asText().contains("1000 bytes"), r.body());
  }

  /**
   * A request nothing answers ends at the request timeout in the API's error shape (before: Pekko's
   * 20 s plain-text 503, earlier than the documented ask timeout).
   */
  @Test
  void theRequestTimeoutIsA503InTheApiShape() throws Exception {
    // Its own client: the server closes a timed-out connection, which must not be reused by others.
    HttpResponse<String> r =
        HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .build()
            .send(
                HttpRequest.newBuilder(
                        URI.create(
                            "http://127.0.0.1:" + binding.localAddress().getPort() + "/never"))
                    .header("Authorization", "Bearer k")
                    .build(),
                HttpResponse.BodyHandlers.ofString());
    assertEquals(503, r.statusCode(), r.body());
    JsonNode error = Json.mapper().readTree(r.body()).path("error");
    assertEquals("ServiceUnavailableError", error.path("type").asText(), r.body());
    assertTrue(error.path("message").asText().contains("request-timeout"), r.body());
  }

  @Test
  void theRequestTimeoutMustBeLongerThanTheAskTimeout() {
    org.junit.jupiter.api.Assertions.assertThrows(
        IllegalArgumentException.class,
        () ->
            GatewaySettings.of(0, List.of())
                .withTimeouts(java.time.Duration.ofSeconds(30), java.time.Duration.ofSeconds(20)));
  }
}
