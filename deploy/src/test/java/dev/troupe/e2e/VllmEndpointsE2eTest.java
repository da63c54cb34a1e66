package dev.troupe.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.core.JsonValue;
import com.openai.core.http.StreamResponse;
import com.openai.errors.BadRequestException;
import com.openai.errors.NotFoundException;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionChunk;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import com.openai.models.completions.Completion;
import com.openai.models.completions.CompletionCreateParams;
import com.openai.models.models.Model;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * The vLLM endpoints a client reaches for, through the OpenAI Java SDK on the real server with the
 * demo model: {@code models.retrieve}, {@code completions.create} (text and token-id prompts,
 * integer logprobs, echo, streamed), and an empty answer's {@code content: ""}.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class VllmEndpointsE2eTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  private ChatServer server;
  private OpenAIClient client;

  @BeforeAll
  void start() throws Exception {
    server = ChatServer.start("[{ name = \"demo\", path = \"demo\" }]");
    client =
        OpenAIOkHttpClient.builder()
            .apiKey(ChatServer.KEY)
            .baseUrl(server.baseUrl() + "/v1")
            .maxRetries(0)
            .build();
  }

  @AfterAll
  void stop() throws Exception {
    if (server != null) server.close();
  }

  private JsonNode post(String path, String body) throws Exception {
    HttpResponse<String> r =
        HttpClient.newHttpClient()
            .send(
                HttpRequest.newBuilder(URI.create(server.baseUrl() + path))
                    .header("Authorization", "Bearer " + ChatServer.KEY)
                    .header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString(body))
                    .build(),
                HttpResponse.BodyHandlers.ofString());
    assertEquals(200, r.statusCode(), r.body());
    return JSON.readTree(r.body());
  }

  @Test
  void modelsRetrieveFindsTheServedModelAndA404ForAnUnknownOne() {
    Model m = client.models().retrieve("demo");
    assertEquals("demo", m.id());
    assertEquals("troupe", m.ownedBy());
    NotFoundException e =
        assertThrows(NotFoundException.class, () -> client.models().retrieve("no-such-model"));
    assertEquals(404, e.statusCode());
  }

  private static CompletionCreateParams.Builder completion() {
    return CompletionCreateParams.builder()
        .model(ChatServer.MODEL)
        .prompt("Once upon a time")
        .temperature(1.0)
        .seed(11L)
        .maxTokens(8L);
  }

  @Test
  void completionsCreateStreamedOrNotGivesTheSameText() {
    Completion whole = client.completions().create(completion().logprobs(2L).build());
    assertTrue(whole.id().startsWith("cmpl-"), whole.id());
    var choice = whole.choices().get(0);
    long generated = whole.usage().orElseThrow().completionTokens();
    assertEquals(8, generated, "max_tokens 8, nothing stops a random model earlier");
    assertEquals("length", choice.finishReason().asString());
    var logprobs = choice.logprobs().orElseThrow();
    assertEquals(generated, logprobs.tokens().orElseThrow().size());
    assertEquals(choice.text(), String.join("", logprobs.tokens().orElseThrow()));

    StringBuilder streamed = new StringBuilder();
    String finish = null;
    try (StreamResponse<Completion> s =
        client.completions().createStreaming(completion().build())) {
      for (Completion chunk : (Iterable<Completion>) s.stream()::iterator)
        for (var c : chunk.choices()) {
          streamed.append(c.text());
          // null until the last chunk: read the raw field (the accessor wants a value)
          var reason = c._finishReason().asKnown();
          if (reason.isPresent()) finish = reason.get().asString();
        }
    }
    assertEquals(choice.text(), streamed.toString(), "same seed, same text");
    assertEquals("length", finish);
  }

  @Test
  void tokenIdPromptsAndEcho() throws Exception {
    JsonNode ids = post("/tokenize", "{\"prompt\":\"Once upon a time\"}").path("tokens");
    List<Long> tokens = new java.util.ArrayList<>();
    ids.forEach(t -> tokens.add(t.asLong()));
    Completion byIds =
        client
            .completions()
            .create(completion().promptOfArrayOfTokens(tokens).echo(true).n(2L).build());
    Completion byText = client.completions().create(completion().echo(true).n(2L).build());
    assertEquals(2, byIds.choices().size());
    for (int i = 0; i < 2; i++) {
      assertTrue(byIds.choices().get(i).text().startsWith("Once upon a time"));
      assertEquals(
          byText.choices().get(i).text(),
          byIds.choices().get(i).text(),
          "the same prompt as text or ids");
    }
    assertEquals(
        tokens.size(), byIds.usage().orElseThrow().promptTokens() / 1, "usage of the ids prompt");
    BadRequestException suffix =
        assertThrows(
            BadRequestException.class,
            () -> client.completions().create(completion().suffix("!").build()));
    assertTrue(suffix.getMessage().contains("suffix"), suffix.getMessage());
  }

  @Test
  void aStopStringAtTheVeryStartGivesEmptyContentNotNull() throws Exception {
    // the first token is forced (logit_bias) and the stop string matches its start
    int hello = post("/tokenize", "{\"prompt\":\"Hello\"}").path("tokens").get(0).asInt();
    ChatCompletionCreateParams params =
        ChatCompletionCreateParams.builder()
            .model(ChatServer.MODEL)
            .addUserMessage("Say hello")
            .maxCompletionTokens(5)
            .stop("Hel")
            .putAdditionalBodyProperty(
                "logit_bias", JsonValue.from(Map.of(String.valueOf(hello), 100)))
            .build();
    ChatCompletion c = client.chat().completions().create(params);
    var choice = c.choices().get(0);
    assertEquals("stop", choice.finishReason().asString());
    assertEquals("", choice.message().content().orElseThrow(), "content \"\", not null");

    // streamed: the choice's last chunk carries content ""
    String lastContent = null;
    try (StreamResponse<ChatCompletionChunk> s =
        client.chat().completions().createStreaming(params)) {
      for (ChatCompletionChunk chunk : (Iterable<ChatCompletionChunk>) s.stream()::iterator)
        for (var ch : chunk.choices())
          if (ch.finishReason().isPresent()) lastContent = ch.delta().content().orElse(null);
    }
    assertEquals("", lastContent);
    assertFalse(c.choices().isEmpty());
  }
}
