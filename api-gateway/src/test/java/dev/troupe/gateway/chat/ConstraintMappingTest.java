package dev.troupe.gateway.chat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.troupe.gateway.http.ApiException;
import dev.troupe.gateway.http.JsonBodies;
import dev.troupe.gateway.replicas.ModelFacts;
import dev.troupe.protocol.api.chat.ChatCompletionRequest;
import dev.troupe.protocol.cluster.StructuredOutputsParams;
import dev.troupe.protocol.cluster.StructuredOutputsParams.Kind;
import dev.troupe.protocol.cluster.ToolCalling;
import java.util.Optional;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.Test;

/**
 * {@code structured_outputs}, {@code response_format}, {@code tools} and {@code tool_choice} become
 * the one constraint the worker compiles and the tool-calling mode, as vLLM maps them.
 */
class ConstraintMappingTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final ModelFacts PLAIN = new ModelFacts("m", 128, false);
  private static final ModelFacts AUTO = new ModelFacts("m", 128, false, "qwen3", "hermes");
  private static final String MESSAGES = "\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]";
  private static final String TOOLS =
      "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"parameters\":"
          + "{\"type\":\"object\",\"properties\":{\"loc\":{\"$ref\":\"#/$defs/Loc\"}},\"required\":[\"loc\"],"
          + "\"$defs\":{\"Loc\":{\"type\":\"string\"}}}}},"
          + "{\"type\":\"function\",\"function\":{\"name\":\"now\"}}]";

  static ChatPlan map(ModelFacts model, String fields) {
    String json = "{" + MESSAGES + "," + fields + "}";
    ChatCompletionRequest r =
        JsonBodies.parse(ByteString.fromString(json), ChatCompletionRequest.class);
    return ChatRequestMapper.map(r, model, Optional.empty());
  }

  static StructuredOutputsParams constraint(ChatPlan p) {
    return p.generation().sampling().structuredOutputs();
  }

  @Test
  void structuredOutputsKindsAndOptions() throws Exception {
    StructuredOutputsParams regex =
        constraint(
            map(
                PLAIN,
                "\"structured_outputs\":{\"regex\":\"[0-9]+\",\"disable_any_whitespace\":true,"
                    + "\"whitespace_pattern\":\" ?\",\"_backend\":\"xgrammar\"}"));
    assertEquals(Kind.REGEX, regex.kind());
    assertEquals("[0-9]+", regex.spec());
    assertEquals("structured_outputs.regex", regex.param());
    assertTrue(regex.disableAnyWhitespace());
    assertEquals(" ?", regex.whitespacePattern());
    StructuredOutputsParams json =
        constraint(
            map(
                PLAIN,
                "\"structured_outputs\":{\"json\":{\"type\":\"object\",\"properties\":{\"b\":{},\"a\":{}}}}"));
    assertEquals(Kind.JSON, json.kind());
    assertEquals(
        "{\"type\":\"object\",\"properties\":{\"b\":{},\"a\":{}}}",
        json.spec(),
        "property order kept");
    assertEquals(
        "{\"type\": \"string\"}",
        constraint(
                map(PLAIN, "\"structured_outputs\":{\"json\":\"{\\\"type\\\": \\\"string\\\"}\"}"))
            .spec(),
        "a schema string is used as it is");
    assertEquals(
        Kind.CHOICE,
        constraint(map(PLAIN, "\"structured_outputs\":{\"choice\":[\"a\",\"b\"]}")).kind());
    assertEquals(
        Kind.GRAMMAR,
        constraint(map(PLAIN, "\"structured_outputs\":{\"grammar\":\"root ::= \\\"a\\\"\"}"))
            .kind());
    assertEquals(
        Kind.JSON_OBJECT,
        constraint(map(PLAIN, "\"structured_outputs\":{\"json_object\":true}")).kind());
    assertNull(constraint(map(PLAIN, "\"structured_outputs\":{\"json_object\":false}")));
  }

  @Test
  void responseFormats() throws Exception {
    StructuredOutputsParams schema =
        constraint(
            map(
                PLAIN,
                "\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"x\",\"schema\":{\"type\":\"integer\"},\"strict\":true}}"));
    assertEquals(Kind.JSON, schema.kind());
    assertEquals("response_format", schema.param());
    assertEquals("{\"type\":\"integer\"}", schema.spec());
    assertEquals(
        Kind.JSON_OBJECT,
        constraint(map(PLAIN, "\"response_format\":{\"type\":\"json_object\"}")).kind());
    assertNull(constraint(map(PLAIN, "\"response_format\":{\"type\":\"text\"}")));
    StructuredOutputsParams tag =
        constraint(
            map(
                PLAIN,
                "\"response_format\":{\"type\":\"structural_tag\",\"structures\":[{\"begin\":\"<f>\",\"schema\":{},\"end\":\"</f>\"}],\"triggers\":[\"<f\"]}"));
    assertEquals(Kind.STRUCTURAL_TAG, tag.kind());
    JsonNode t = JSON.readTree(tag.spec());
    assertEquals("<f>", t.get("structures").get(0).get("begin").asText());
    assertEquals("<f", t.get("triggers").get(0).asText());
  }

  @Test
  void toolChoices() throws Exception {
    assertEquals(
        ToolCalling.Mode.NONE,
        map(PLAIN, TOOLS).generation().toolCalling().mode(),
        "no auto: none");
    assertEquals(
        ToolCalling.Mode.AUTO,
        map(AUTO, TOOLS).generation().toolCalling().mode(),
        "tools alone mean auto");
    ChatPlan auto = map(AUTO, TOOLS + ",\"tool_choice\":\"auto\",\"parallel_tool_calls\":false");
    assertEquals(ToolCalling.auto("hermes", false), auto.generation().toolCalling());
    assertNull(constraint(auto), "auto parses free text");

    ChatPlan required = map(PLAIN, TOOLS + ",\"tool_choice\":\"required\",\"stream\":true");
    assertEquals(ToolCalling.Mode.REQUIRED, required.generation().toolCalling().mode());
    assertTrue(required.generation().streamed());
    JsonNode s = JSON.readTree(constraint(required).spec());
    assertEquals("array", s.get("type").asText());
    assertEquals(1, s.get("minItems").asInt());
    assertNull(s.get("maxItems"), "parallel calls by default");
    assertEquals(
        "get_weather",
        s.get("items")
            .get("anyOf")
            .get(0)
            .get("properties")
            .get("name")
            .get("enum")
            .get(0)
            .asText());
    assertEquals(
        "string", s.get("$defs").get("Loc").get("type").asText(), "$defs hoisted to the root");
    assertEquals(
        1,
        JSON.readTree(
                constraint(
                        map(
                            PLAIN,
                            TOOLS + ",\"tool_choice\":\"required\",\"parallel_tool_calls\":false"))
                    .spec())
            .get("maxItems")
            .asInt());

    ChatPlan named =
        map(
            PLAIN,
            TOOLS + ",\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"now\"}}");
    assertEquals(ToolCalling.named("now"), named.generation().toolCalling());
    JsonNode p = JSON.readTree(constraint(named).spec());
    assertEquals(false, p.get("additionalProperties").asBoolean(), "no parameters: exactly {}");
    assertEquals(ToolCalling.Mode.NAMED, named.toolMode());

    ApiException conflict =
        assertThrows(
            ApiException.class,
            () ->
                map(
                    PLAIN,
                    "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"a\",\"parameters\":{\"$defs\":{\"X\":{\"type\":\"string\"}}}}},"
                        + "{\"type\":\"function\",\"function\":{\"name\":\"b\",\"parameters\":{\"$defs\":{\"X\":{\"type\":\"integer\"}}}}}],"
                        + "\"tool_choice\":\"required\""));
    assertTrue(conflict.getMessage().contains("conflicting $defs"), conflict.getMessage());
  }
}
