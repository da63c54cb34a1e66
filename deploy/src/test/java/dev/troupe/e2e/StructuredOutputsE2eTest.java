package dev.troupe.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.core.JsonValue;
import com.openai.core.http.StreamResponse;
import com.openai.errors.BadRequestException;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionChunk;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import com.openai.models.chat.completions.ChatCompletionMessageFunctionToolCall;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Structured outputs, tool choice and reasoning through real HTTP with the OpenAI Java SDK, on the
 * demo model (random weights: every valid output comes from the constraint). The model runs the
 * qwen3 reasoning parser (the demo default) and serves auto tool choice with the hermes parser.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class StructuredOutputsE2eTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String MODEL = "demo";
  private static final Map<String, Object> NO_THINKING = Map.of("enable_thinking", false);

  private ChatServer server;
  private OpenAIClient client;

  @BeforeAll
  void start() throws Exception {
    server =
        ChatServer.start(
            "[{ name = \"demo\", path = \"demo\", tool-call-parser = \"hermes\","
                + " enable-auto-tool-choice = true }]");
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

  private static ChatCompletionCreateParams.Builder chat(String prompt) {
    return ChatCompletionCreateParams.builder()
        .model(MODEL)
        .addUserMessage(prompt)
        .temperature(1.0)
        .seed(7)
        .putAdditionalBodyProperty("chat_template_kwargs", JsonValue.from(NO_THINKING));
  }

  static final Map<String, Object> SCHEMA =
      Map.of(
          "type", "object",
          "properties",
              Map.of(
                  "city", Map.of("type", "string", "maxLength", 6),
                  "days", Map.of("type", "integer", "minimum", 1, "maximum", 7)),
          "required", List.of("city", "days"));

  static final Map<String, Object> TOOL =
      Map.of("type", "function", "function", Map.of("name", "get_weather", "parameters", SCHEMA));

  @Test
  void responseFormatJsonSchemaAndJsonObject() throws Exception {
    ChatCompletion c =
        client
            .chat()
            .completions()
            .create(
                chat("weather as JSON")
                    .n(2)
                    .maxCompletionTokens(200)
                    .putAdditionalBodyProperty(
                        "response_format",
                        JsonValue.from(
                            Map.of(
                                "type",
                                "json_schema",
                                "json_schema",
                                Map.of("name", "w", "schema", SCHEMA))))
                    .putAdditionalBodyProperty(
                        "structured_outputs",
                        JsonValue.from(Map.of("disable_any_whitespace", true)))
                    .build());
    for (var choice : c.choices()) {
      JsonNode doc = JSON.readTree(choice.message().content().orElseThrow());
      assertTrue(doc.get("days").asInt() >= 1 && doc.get("days").asInt() <= 7, doc.toString());
      assertEquals("stop", choice.finishReason().asString());
    }
    ChatCompletion o =
        client
            .chat()
            .completions()
            .create(
                chat("any object")
                    .maxCompletionTokens(30)
                    .putAdditionalBodyProperty(
                        "response_format", JsonValue.from(Map.of("type", "json_object")))
                    .build());
    assertTrue(o.choices().get(0).message().content().orElseThrow().startsWith("{"));
  }

  @Test
  void regexAndChoiceThroughStructuredOutputs() {
    ChatCompletion c =
        client
            .chat()
            .completions()
            .create(
                chat("a code")
                    .maxCompletionTokens(20)
                    .putAdditionalBodyProperty(
                        "structured_outputs", JsonValue.from(Map.of("regex", "[A-Z]{3}-[0-9]{2}")))
                    .build());
    assertTrue(c.choices().get(0).message().content().orElseThrow().matches("[A-Z]{3}-[0-9]{2}"));
    ChatCompletion d =
        client
            .chat()
            .completions()
            .create(
                chat("sentiment")
                    .maxCompletionTokens(20)
                    .putAdditionalBodyProperty(
                        "structured_outputs",
                        JsonValue.from(Map.of("choice", List.of("positive", "negative"))))
                    .build());
    assertTrue(
        List.of("positive", "negative")
            .contains(d.choices().get(0).message().content().orElseThrow()));
  }

  @Test
  void requiredToolChoiceStreamedAndNot() throws Exception {
    ChatCompletionCreateParams params =
        chat("weather?")
            .maxCompletionTokens(200)
            .putAdditionalBodyProperty("tools", JsonValue.from(List.of(TOOL)))
            .putAdditionalBodyProperty("tool_choice", JsonValue.from("required"))
            .putAdditionalBodyProperty("parallel_tool_calls", JsonValue.from(false))
            // one call, no extra keys, no whitespace: the output is bounded, so it completes
            .putAdditionalBodyProperty(
                "structured_outputs",
                JsonValue.from(
                    Map.of("disable_any_whitespace", true, "disable_additional_properties", true)))
            .build();
    ChatCompletion c = client.chat().completions().create(params);
    var message = c.choices().get(0).message();
    List<ChatCompletionMessageFunctionToolCall> calls = new ArrayList<>();
    for (var call : message.toolCalls().orElseThrow()) calls.add(call.asFunction());
    assertEquals(1, calls.size(), "parallel_tool_calls false: one call");
    for (var call : calls) {
      assertEquals("get_weather", call.function().name());
      assertTrue(
          JSON.readTree(call.function().arguments()).has("days"), call.function().arguments());
      assertTrue(call.id().startsWith("chatcmpl-tool-"), call.id());
    }
    assertEquals("tool_calls", c.choices().get(0).finishReason().asString());
    assertEquals("", message.content().orElse(""));

    // the same request streamed: the same calls, assembled from deltas
    Map<Long, String[]> streamed = new TreeMap<>();
    String finish = null;
    try (StreamResponse<ChatCompletionChunk> s =
        client.chat().completions().createStreaming(params)) {
      for (ChatCompletionChunk chunk : (Iterable<ChatCompletionChunk>) s.stream()::iterator) {
        for (var choice : chunk.choices()) {
          if (choice.finishReason().isPresent()) finish = choice.finishReason().get().asString();
          for (var d : choice.delta().toolCalls().orElse(List.of())) {
            String[] call = streamed.computeIfAbsent(d.index(), k -> new String[] {null, null, ""});
            d.id().ifPresent(id -> call[0] = id);
            d.function().flatMap(f -> f.name()).ifPresent(n -> call[1] = n);
            d.function().flatMap(f -> f.arguments()).ifPresent(a -> call[2] += a);
          }
        }
      }
    }
    assertEquals("tool_calls", finish);
    assertEquals(calls.size(), streamed.size());
    int k = 0;
    for (String[] call : streamed.values()) {
      assertEquals(calls.get(k).function().name(), call[1]);
      assertEquals(calls.get(k).function().arguments(), call[2], "same seed, same arguments");
      k++;
    }
  }

  @Test
  void namedToolChoiceAndAutoWithTheHermesParser() throws Exception {
    ChatCompletion named =
        client
            .chat()
            .completions()
            .create(
                chat("weather?")
                    .maxCompletionTokens(100)
                    .putAdditionalBodyProperty("tools", JsonValue.from(List.of(TOOL)))
                    .putAdditionalBodyProperty(
                        "structured_outputs",
                        JsonValue.from(Map.of("disable_any_whitespace", true)))
                    .putAdditionalBodyProperty(
                        "tool_choice",
                        JsonValue.from(
                            Map.of("type", "function", "function", Map.of("name", "get_weather"))))
                    .build());
    var call = named.choices().get(0).message().toolCalls().orElseThrow().get(0).asFunction();
    assertEquals("get_weather", call.function().name());
    assertTrue(JSON.readTree(call.function().arguments()).has("city"));
    assertEquals(
        "stop",
        named.choices().get(0).finishReason().asString(),
        "vLLM and OpenAI: named ends with stop");

    // auto: the model's hermes parser reads <tool_call> blocks; a grammar makes the random model
    // write one
    String grammar =
        "root ::= \"<tool_call>\\n{\\\"name\\\": \\\"get_weather\\\", \\\"arguments\\\": {\\\"city\\\": \\\"\" [a-z]{1,5} \"\\\", \\\"days\\\": 3}}\\n</tool_call>\"";
    ChatCompletion auto =
        client
            .chat()
            .completions()
            .create(
                chat("weather?")
                    .maxCompletionTokens(100)
                    .putAdditionalBodyProperty("tools", JsonValue.from(List.of(TOOL)))
                    .putAdditionalBodyProperty(
                        "structured_outputs", JsonValue.from(Map.of("grammar", grammar)))
                    .build());
    var autoCall = auto.choices().get(0).message().toolCalls().orElseThrow().get(0).asFunction();
    assertEquals("get_weather", autoCall.function().name());
    assertEquals(3, JSON.readTree(autoCall.function().arguments()).get("days").asInt());
    assertEquals("tool_calls", auto.choices().get(0).finishReason().asString());
  }

  private static final String OPEN_THINK_TEMPLATE =
      "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
          + "<|im_start|>assistant\n<think>\n";

  @Test
  void reasoningInBothShapesAndDroppedOnRequest() {
    ChatCompletionCreateParams params =
        ChatCompletionCreateParams.builder()
            .model(MODEL)
            .addUserMessage("think")
            .temperature(1.0)
            .seed(11)
            .maxCompletionTokens(6)
            .putAdditionalBodyProperty("chat_template", JsonValue.from(OPEN_THINK_TEMPLATE))
            .build();
    ChatCompletion c = client.chat().completions().create(params);
    var m = c.choices().get(0).message();
    String reasoning = m._additionalProperties().get("reasoning_content").convert(String.class);
    assertEquals(reasoning, m._additionalProperties().get("reasoning").convert(String.class));
    assertTrue(reasoning != null && !reasoning.isEmpty());
    assertTrue(m.content().isEmpty(), "cut before </think>: no content");

    StringBuilder streamed = new StringBuilder();
    try (StreamResponse<ChatCompletionChunk> s =
        client.chat().completions().createStreaming(params)) {
      for (ChatCompletionChunk chunk : (Iterable<ChatCompletionChunk>) s.stream()::iterator)
        for (var choice : chunk.choices()) {
          JsonValue r = choice.delta()._additionalProperties().get("reasoning_content");
          if (r != null && !r.isNull()) streamed.append(r.convert(String.class));
        }
    }
    assertEquals(reasoning, streamed.toString());

    ChatCompletion dropped =
        client
            .chat()
            .completions()
            .create(
                params.toBuilder()
                    .putAdditionalBodyProperty("include_reasoning", JsonValue.from(false))
                    .build());
    JsonValue none =
        dropped.choices().get(0).message()._additionalProperties().get("reasoning_content");
    assertTrue(none == null || none.isNull());
    try (StreamResponse<ChatCompletionChunk> s =
        client
            .chat()
            .completions()
            .createStreaming(
                params.toBuilder()
                    .putAdditionalBodyProperty("include_reasoning", JsonValue.from(false))
                    .build())) {
      for (ChatCompletionChunk chunk : (Iterable<ChatCompletionChunk>) s.stream()::iterator)
        for (var choice : chunk.choices()) {
          JsonValue r = choice.delta()._additionalProperties().get("reasoning_content");
          assertTrue(r == null || r.isNull(), "no reasoning deltas: " + r);
        }
    }
  }

  @Test
  void badConstraintsAre400s() {
    assertBad(
        chat("x")
            .putAdditionalBodyProperty("structured_outputs", JsonValue.from(Map.of("regex", "(a"))),
        "Failed to transform regex");
    assertBad(
        chat("x")
            .putAdditionalBodyProperty(
                "structured_outputs", JsonValue.from(Map.of("json", Map.of("type", "nope")))),
        "Failed to transform json schema");
    assertBad(
        chat("x")
            .putAdditionalBodyProperty(
                "structured_outputs", JsonValue.from(Map.of("grammar", "root ::= missing"))),
        "Invalid grammar specification");
    assertBad(
        chat("x")
            .putAdditionalBodyProperty("tools", JsonValue.from(List.of(TOOL)))
            .putAdditionalBodyProperty("tool_choice", JsonValue.from("required"))
            .putAdditionalBodyProperty(
                "response_format", JsonValue.from(Map.of("type", "json_object"))),
        "either use constraints");
  }

  private void assertBad(ChatCompletionCreateParams.Builder p, String messagePart) {
    try {
      client.chat().completions().create(p.maxCompletionTokens(5).build());
      throw new AssertionError("expected a 400 with " + messagePart);
    } catch (BadRequestException e) {
      assertTrue(e.getMessage().contains(messagePart), e.getMessage());
    }
  }
}
