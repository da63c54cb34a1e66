package dev.troupe.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.protocol.Json;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * {@code /tokenize}, {@code /detokenize}, {@code /health}, {@code /version} and raw-JSON chat on
 * the real server: the tokenizer endpoints agree with each other and with the chat's prompt count.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TokenizerEndpointsE2eTest {
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

  private HttpResponse<String> post(String path, String json) throws Exception {
    return http.send(
        HttpRequest.newBuilder(URI.create(server.baseUrl() + path))
            .header("Content-Type", "application/json")
            .header("Authorization", "Bearer " + ChatServer.KEY)
            .POST(HttpRequest.BodyPublishers.ofString(json))
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private static JsonNode json(HttpResponse<String> r) throws Exception {
    return Json.mapper().readTree(r.body());
  }

  @Test
  void tokenizeThenDetokenizeRoundTrips() throws Exception {
    HttpResponse<String> t =
        post(
            "/tokenize",
            "{\"prompt\":\"Hello world, said the actor.\",\"return_token_strs\":true}");
    assertEquals(200, t.statusCode(), t.body());
    JsonNode tokens = json(t);
    assertEquals(tokens.path("tokens").size(), tokens.path("count").asInt());
    assertEquals(tokens.path("count").asInt(), tokens.path("token_strs").size());
    assertTrue(tokens.path("max_model_len").asInt() > 0);
    HttpResponse<String> d = post("/detokenize", "{\"tokens\":" + tokens.path("tokens") + "}");
    assertEquals(200, d.statusCode(), d.body());
    assertEquals("Hello world, said the actor.", json(d).path("prompt").asText());
  }

  @Test
  void tokenizedMessagesCountAsTheChatsPrompt() throws Exception {
    String messages =
        "[{\"role\":\"system\",\"content\":\"Be brief.\"},{\"role\":\"user\",\"content\":\"Name a colour.\"}]";
    JsonNode t = json(post("/tokenize", "{\"messages\":" + messages + "}"));
    HttpResponse<String> chat =
        post(
            "/v1/chat/completions",
            "{\"model\":\"demo\",\"messages\":"
                + messages
                + ",\"max_tokens\":2,\"return_token_ids\":true}");
    assertEquals(200, chat.statusCode(), chat.body());
    JsonNode c = json(chat);
    assertEquals(t.path("count").asInt(), c.path("usage").path("prompt_tokens").asInt());
    assertEquals(
        t.path("tokens"),
        c.path("prompt_token_ids"),
        "the chat renders the same prompt as /tokenize");
  }

  @Test
  void rawJsonErrorsAndVersion() throws Exception {
    HttpResponse<String> bad =
        post(
            "/v1/chat/completions",
            "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"seed\":\"abc\"}");
    assertEquals(400, bad.statusCode());
    assertEquals("seed", json(bad).path("error").path("param").asText());
    HttpResponse<String> malformed = post("/v1/chat/completions", "{\"messages\": [");
    assertEquals(400, malformed.statusCode());
    assertEquals("BadRequestError", json(malformed).path("error").path("type").asText());
    HttpResponse<String> version =
        http.send(
            HttpRequest.newBuilder(URI.create(server.baseUrl() + "/version"))
                .header("Authorization", "Bearer " + ChatServer.KEY)
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertEquals(200, version.statusCode());
    assertTrue(json(version).path("version").asText().length() > 0);
  }
}
