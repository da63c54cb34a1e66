package dev.troupe.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.protocol.Json;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * The findings of issue 9 on the surface of the real server (one node, real worker): bodies that
 * are not objects and a constructor-style logits processor were 500s; wrong JSON types and trailing
 * data were accepted; the tokenizer endpoints and metrics were open; the body's {@code request_id}
 * was not the response's {@code X-Request-Id}; the API listened on every interface.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class HostileRequestsE2eTest {
  private static final String MESSAGES = "[{\"role\":\"user\",\"content\":\"Hello\"}]";
  private ChatServer server;
  private final HttpClient http =
      HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

  @BeforeAll
  void start() throws Exception {
    server = ChatServer.start();
  }

  @AfterAll
  void stop() throws Exception {
    if (server != null) server.close();
  }

  private HttpResponse<String> post(String path, String json, boolean withKey) throws Exception {
    HttpRequest.Builder b =
        HttpRequest.newBuilder(URI.create(server.baseUrl() + path))
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(json));
    if (withKey) b.header("Authorization", "Bearer " + ChatServer.KEY);
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  private HttpResponse<String> chat(String extra) throws Exception {
    return post(
        "/v1/chat/completions",
        "{\"model\":\"demo\",\"messages\":" + MESSAGES + ",\"max_tokens\":2" + extra + "}",
        true);
  }

  private static JsonNode error(HttpResponse<String> r) throws Exception {
    return Json.mapper().readTree(r.body()).path("error");
  }

  private static void assertBadRequest(HttpResponse<String> r, String param) throws Exception {
    assertEquals(400, r.statusCode(), r.body());
    JsonNode e = error(r);
    assertEquals("BadRequestError", e.path("type").asText(), r.body());
    if (param == null) assertTrue(e.path("param").isNull(), r.body());
    else assertEquals(param, e.path("param").asText(), r.body());
  }

  @Test
  void formerFiveHundredsAreBadRequests() throws Exception {
    assertBadRequest(post("/v1/chat/completions", "null", true), null);
    assertBadRequest(post("/tokenize", "null", true), null);
    // the worker refuses a class it is not configured to load: nothing is ever instantiated
    assertBadRequest(
        chat(",\"logits_processors\":[{\"qualname\":\"java.lang.Runtime\",\"args\":[\"id\"]}]"),
        "logits_processors");
  }

  @Test
  void strictJsonNamesTheField() throws Exception {
    assertBadRequest(chat(",\"stream\":7"), "stream");
    assertBadRequest(chat(",\"logprobs\":1"), "logprobs");
    assertBadRequest(chat(",\"user\":5"), "user");
    assertBadRequest(
        post(
            "/v1/chat/completions",
            "{\"model\":\"demo\",\"messages\":" + MESSAGES + "} trailing",
            true),
        null);
    assertEquals(200, chat(",\"stop\":\"x\",\"seed\":7,\"logit_bias\":{\"5\":1}").statusCode());
  }

  @Test
  void everyPathButHealthNeedsTheKey() throws Exception {
    for (String path : List.of("/tokenize", "/detokenize"))
      assertEquals(401, post(path, "{\"prompt\":\"x\",\"tokens\":[1]}", false).statusCode(), path);
    for (String path : List.of("/metrics", "/version", "/v1/models")) {
      HttpResponse<String> r =
          http.send(
              HttpRequest.newBuilder(URI.create(server.baseUrl() + path)).build(),
              HttpResponse.BodyHandlers.ofString());
      assertEquals(401, r.statusCode(), path);
      assertEquals("AuthenticationError", error(r).path("type").asText());
    }
    HttpResponse<Void> health =
        http.send(
            HttpRequest.newBuilder(URI.create(server.baseUrl() + "/health")).build(),
            HttpResponse.BodyHandlers.discarding());
    assertEquals(200, health.statusCode());
  }

  @Test
  void theBodysRequestIdIsTheHeaderAndAHeaderWins() throws Exception {
    HttpResponse<String> r = chat(",\"request_id\":\"client-42\"");
    assertEquals(200, r.statusCode(), r.body());
    assertEquals("client-42", r.headers().firstValue("X-Request-Id").orElseThrow());
    assertEquals("chatcmpl-client-42", Json.mapper().readTree(r.body()).path("id").asText());
    HttpResponse<String> invalid = chat(",\"request_id\":\"client-43\",\"n\":0");
    assertEquals(400, invalid.statusCode());
    assertEquals("client-43", invalid.headers().firstValue("X-Request-Id").orElseThrow());
    HttpResponse<String> both =
        http.send(
            HttpRequest.newBuilder(URI.create(server.baseUrl() + "/v1/chat/completions"))
                .header("Content-Type", "application/json")
                .header("Authorization", "Bearer " + ChatServer.KEY)
                .header("X-Request-Id", "from-header")
                .POST(
                    HttpRequest.BodyPublishers.ofString(
                        "{\"messages\":"
                            + MESSAGES
                            + ",\"max_tokens\":1,\"request_id\":\"from-body\"}"))
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertEquals("from-header", both.headers().firstValue("X-Request-Id").orElseThrow());
  }

  @Test
  void theApiListensOnTheHostOnly() {
    assertTrue(
        server.httpAddress().getAddress().isLoopbackAddress(),
        "--host 127.0.0.1 (the default) binds loopback, not " + server.httpAddress());
  }
}
