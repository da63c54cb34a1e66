package dev.troupe.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.core.JsonValue;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import com.openai.models.chat.completions.StructuredChatCompletion;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Every JSON mode ends in a valid document on the random demo model, as a user calls it: the OpenAI
 * Java SDK's structured-output call with a class (its strict schema, unbounded strings), a JSON
 * object, and required and named tool calls, over several seeds, with no whitespace option and the
 * model's defaults (its qwen3 reasoning parser included).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class JsonModesE2eTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final long SEEDS = 3;
  private static final long MAX_TOKENS = 150;
  private static final Set<String> ENDS = Set.of("stop", "length", "tool_calls");

  /** What the SDK turns into a strict JSON schema. */
  public static final class Forecast {
    public String city;
    public long days;
    public List<String> notes;
    public boolean rain;
  }

  static final Map<String, Object> TOOL =
      Map.of(
          "type",
          "function",
          "function",
          Map.of(
              "name",
              "get_weather",
              "parameters",
              Map.of(
                  "type", "object",
                  "properties",
                      Map.of(
                          "location", Map.of("type", "string"),
                          "days", Map.of("type", "integer")),
                  "required", List.of("location", "days"))));

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

  private static ChatCompletionCreateParams.Builder chat(long seed) {
    return ChatCompletionCreateParams.builder()
        .model(ChatServer.MODEL)
        .addUserMessage("The weather in Paris, as JSON.")
        .temperature(1.0)
        .seed(seed)
        .maxCompletionTokens(MAX_TOKENS);
  }

  @Test
  void theSdksStructuredOutputCallParsesForEverySeed() {
    for (long seed = 0; seed < SEEDS; seed++) {
      StructuredChatCompletion<Forecast> c =
          client
              .chat()
              .completions()
              .create(chat(seed).responseFormat(Forecast.class).n(2).build());
      for (var choice : c.choices()) {
        Forecast f = choice.message().content().orElseThrow();
        assertTrue(f.city != null && f.notes != null, "seed " + seed);
        assertTrue(ENDS.contains(choice.finishReason().asString()));
        assertTrue(c.usage().orElseThrow().completionTokens() <= 2 * MAX_TOKENS);
      }
    }
  }

  @Test
  void jsonObjectAndForcedToolCallsAreValidForEverySeed() throws Exception {
    for (long seed = 0; seed < SEEDS; seed++) {
      ChatCompletion object =
          client
              .chat()
              .completions()
              .create(
                  chat(seed)
                      .putAdditionalBodyProperty(
                          "response_format", JsonValue.from(Map.of("type", "json_object")))
                      .build());
      String text = object.choices().get(0).message().content().orElseThrow();
      assertTrue(JSON.readTree(text).isObject(), text);

      for (Object choice :
          List.of(
              "required", Map.of("type", "function", "function", Map.of("name", "get_weather")))) {
        ChatCompletion calls =
            client
                .chat()
                .completions()
                .create(
                    chat(seed)
                        .putAdditionalBodyProperty("tools", JsonValue.from(List.of(TOOL)))
                        .putAdditionalBodyProperty("tool_choice", JsonValue.from(choice))
                        .build());
        var c = calls.choices().get(0);
        var toolCalls = c.message().toolCalls().orElseThrow();
        assertFalse(toolCalls.isEmpty(), "seed " + seed + ", " + choice);
        for (var call : toolCalls) {
          var args = JSON.readTree(call.asFunction().function().arguments());
          assertTrue(args.get("location").isTextual() && args.get("days").isIntegralNumber());
        }
        assertTrue(ENDS.contains(c.finishReason().asString()));
        assertEquals("", c.message().content().orElse(""));
      }
    }
  }
}
