package dev.troupe.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.troupe.protocol.Json;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * The {@code chat_template} bombs of issue 9 through the real server's {@code /tokenize} and chat
 * endpoints: each is a 400 naming {@code chat_template} (before, each one exited the JVM, froze the
 * engine thread or restarted the worker), and the node serves the next request normally.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TemplateBombsE2eTest {
  private static final String MESSAGES = "[{\"role\":\"user\",\"content\":\"Hello\"}]";

  /** Each kills the node or a worker on a build without the template limits. */
  private static final List<String> BOMBS =
      List.of(
          "{{ " + "(".repeat(600) + "1" + ")".repeat(600) + " }}",
          "{{ 'x\\nx'|indent(2000000000) }}",
          "{% set s = 'a' * 16000000 %}{% set t = s~s~s~s~s~s~s~s %}{{ t }}",
          "{{ 2 ** 9223372036854775807 }}",
          "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
          "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
          "{{ '\\U00110000' }}");

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
            .timeout(Duration.ofSeconds(60))
            .POST(HttpRequest.BodyPublishers.ofString(json))
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private static String withTemplate(String base, String template) {
    ObjectNode body = (ObjectNode) Json.mapper().valueToTree(parse(base));
    body.put("chat_template", template);
    return body.toString();
  }

  private static JsonNode parse(String json) {
    try {
      return Json.mapper().readTree(json);
    } catch (Exception e) {
      throw new IllegalArgumentException(e);
    }
  }

  private static void assertNamesTemplate(HttpResponse<String> r, String template) {
    String what = template.substring(0, Math.min(60, template.length()));
    assertEquals(400, r.statusCode(), what + " -> " + r.body());
    JsonNode error = parse(r.body()).path("error");
    assertEquals("chat_template", error.path("param").asText(), what + " -> " + r.body());
    assertEquals("BadRequestError", error.path("type").asText());
  }

  /** A normal chat and a normal tokenize still succeed, and the node is healthy. */
  private void assertStillServing() throws Exception {
    HttpResponse<String> chat =
        post(
            "/v1/chat/completions",
            "{\"model\":\"demo\",\"messages\":" + MESSAGES + ",\"max_tokens\":2}");
    assertEquals(200, chat.statusCode(), chat.body());
    assertEquals(1, parse(chat.body()).path("choices").size());
    HttpResponse<String> tokenize = post("/tokenize", "{\"messages\":" + MESSAGES + "}");
    assertEquals(200, tokenize.statusCode(), tokenize.body());
    HttpResponse<Void> health =
        http.send(
            HttpRequest.newBuilder(URI.create(server.baseUrl() + "/health")).build(),
            HttpResponse.BodyHandlers.discarding());
    assertEquals(200, health.statusCode());
  }

  @Test
  void bombsThroughTokenizeAreBadRequestsNamingTheTemplate() throws Exception {
    for (String bomb : BOMBS) {
      assertNamesTemplate(
          post("/tokenize", withTemplate("{\"messages\":" + MESSAGES + "}", bomb)), bomb);
      assertStillServing();
    }
  }

  @Test
  void bombsThroughChatAreBadRequestsNamingTheTemplate() throws Exception {
    for (String bomb : BOMBS) {
      String base = "{\"model\":\"demo\",\"messages\":" + MESSAGES + ",\"max_tokens\":2}";
      assertNamesTemplate(post("/v1/chat/completions", withTemplate(base, bomb)), bomb);
      String streaming =
          "{\"model\":\"demo\",\"messages\":" + MESSAGES + ",\"max_tokens\":2,\"stream\":true}";
      assertNamesTemplate(post("/v1/chat/completions", withTemplate(streaming, bomb)), bomb);
      assertStillServing();
    }
  }

  @Test
  void formerCrashesThatPythonRendersNowRenderAsPythonDoes() throws Exception {
    // {{ 10**100 }} restarted the worker; {{ 1 ** 9223372036854775807 }} froze its engine thread
    HttpResponse<String> big =
        post(
            "/tokenize",
            withTemplate(
                "{\"messages\":" + MESSAGES + ",\"return_token_strs\":true}", "{{ 10**100 }}"));
    assertEquals(200, big.statusCode(), big.body());
    StringBuilder text = new StringBuilder();
    parse(big.body()).path("token_strs").forEach(t -> text.append(t.asText()));
    assertEquals("1" + "0".repeat(100), text.toString());
    HttpResponse<String> one =
        post(
            "/v1/chat/completions",
            withTemplate(
                "{\"model\":\"demo\",\"messages\":" + MESSAGES + ",\"max_tokens\":2}",
                "{{ 1 ** 9223372036854775807 }}"));
    assertEquals(200, one.statusCode(), one.body());
    assertTrue(parse(one.body()).path("usage").path("prompt_tokens").asInt() >= 1);
    assertStillServing();
  }
}
