package dev.troupe.gateway.chat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.troupe.gateway.http.JsonBodies;
import dev.troupe.gateway.replicas.ModelFacts;
import dev.troupe.protocol.api.chat.ChatCompletionRequest;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.ChoiceUpdate;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.FinishReason;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationEvent;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationUpdate;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Started;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.TextSplit;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.ToolCallPiece;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Usage;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.Test;

/**
 * Empty outputs as vLLM writes them: {@code content: ""} when nothing was generated as text (a stop
 * string matched at the very start, EOS first), with or without a reasoning parser, streamed (the
 * finishing delta) and not; null only where vLLM's parsers report the part absent (the output
 * reasoned and wrote no content, or an auto tool-call parser found calls and no text).
 */
class EmptyContentTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String MESSAGES = "\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]";
  private static final String TOOLS =
      "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}]";

  private static ChatPlan plan(String reasoningParser, String autoTools, String fields) {
    String json = "{" + MESSAGES + (fields.isEmpty() ? "" : "," + fields) + "}";
    ChatCompletionRequest r =
        JsonBodies.parse(ByteString.fromString(json), ChatCompletionRequest.class);
    return ChatRequestMapper.map(
        r, new ModelFacts("m", 128, false, reasoningParser, autoTools), Optional.empty());
  }

  /** One step that produced a token but no text and finished the choice, split as given. */
  private static List<GenerationEvent> emptyOutput(
      String reasoning, List<ToolCallPiece> calls, TextSplit split, FinishReason reason) {
    Started started = new Started("m#0", null, 0, 3, null, null);
    ChoiceUpdate last =
        new ChoiceUpdate(
            0,
            "",
            List.of(42),
            null,
            reason,
            reason == FinishReason.STOP ? "Hel" : null,
            reasoning,
            calls,
            split);
    return List.of(
        new GenerationUpdate("r", started, List.of(), null),
        new GenerationUpdate("r", null, List.of(last), new Usage(3, 1, 0)));
  }

  private static JsonNode message(ChatPlan plan, List<GenerationEvent> events) throws Exception {
    ChatResponseFolder folder = new ChatResponseFolder(plan, 0);
    for (GenerationEvent e : events) folder.add(e);
    return JSON.valueToTree(folder.response()).path("choices").get(0).path("message");
  }

  /** The stream's deltas of choice 0, the role chunk excluded. */
  private static List<JsonNode> deltas(ChatPlan plan, List<GenerationEvent> events)
      throws Exception {
    ChatChunkWriter writer = new ChatChunkWriter(plan, 0);
    List<JsonNode> out = new ArrayList<>();
    for (GenerationEvent e : events)
      for (ByteString frame : writer.onEvent(e)) {
        String s = frame.decodeString(StandardCharsets.UTF_8).trim();
        if (s.equals("data: [DONE]")) continue;
        JsonNode chunk = JSON.readTree(s.substring("data: ".length()));
        for (JsonNode c : chunk.path("choices"))
          if (!c.path("delta").has("role")) out.add(c.path("delta"));
      }
    return out;
  }

  @Test
  void aStopStringAtTheVeryStartGivesEmptyContentWithOrWithoutAReasoningParser() throws Exception {
    for (String parser : new String[] {null, "qwen3"}) {
      for (boolean stream : new boolean[] {false, true}) {
        ChatPlan p = plan(parser, null, "\"stop\":[\"Hel\"],\"stream\":" + stream);
        List<GenerationEvent> events =
            emptyOutput("", List.of(), TextSplit.CONTENT, FinishReason.STOP);
        if (!stream) {
          JsonNode m = message(p, events);
          assertTrue(m.path("content").isTextual(), parser + ": " + m);
          assertEquals("", m.path("content").asText());
          assertTrue(m.path("reasoning_content").isNull());
        } else {
          List<JsonNode> d = deltas(p, events);
          assertEquals(1, d.size(), d.toString());
          assertEquals("", d.get(0).path("content").asText(null), parser + ": " + d);
        }
      }
    }
  }

  @Test
  void aReasonedOutputWithoutContentHasNullContentAndItsReasoning() throws Exception {
    // cut in its reasoning, nothing reasoned yet (deepseek_r1 starts in reasoning): "" and null
    ChatPlan p = plan("deepseek_r1", null, "");
    JsonNode cut = message(p, emptyOutput("", List.of(), TextSplit.REASONING, FinishReason.LENGTH));
    assertTrue(cut.path("content").isNull(), cut.toString());
    assertEquals("", cut.path("reasoning_content").asText(null));
    assertEquals("", cut.path("reasoning").asText(null));
    // the reasoning ended and nothing followed
    JsonNode after =
        message(p, emptyOutput("why", List.of(), TextSplit.AFTER_REASONING, FinishReason.STOP));
    assertTrue(after.path("content").isNull());
    assertEquals("why", after.path("reasoning_content").asText());
    // streamed: the finishing delta is an empty reasoning part in the reasoning, {} is not needed
    ChatPlan s = plan("deepseek_r1", null, "\"stream\":true");
    List<JsonNode> d =
        deltas(s, emptyOutput("", List.of(), TextSplit.REASONING, FinishReason.LENGTH));
    assertEquals("", d.get(0).path("reasoning_content").asText(null), d.toString());
    assertFalse(d.get(0).has("content"));
    // include_reasoning false: nothing to show
    ChatPlan hidden = plan("deepseek_r1", null, "\"include_reasoning\":false");
    JsonNode h =
        message(hidden, emptyOutput("", List.of(), TextSplit.REASONING, FinishReason.LENGTH));
    assertTrue(h.path("reasoning_content").isNull() && h.path("content").isNull());
  }

  @Test
  void toolCallModes() throws Exception {
    // auto: calls found and no text around them -> null; no calls -> ""
    ChatPlan auto = plan(null, "hermes", TOOLS);
    JsonNode called =
        message(
            auto,
            emptyOutput(
                "",
                List.of(new ToolCallPiece(0, "chatcmpl-tool-1", "f", "{}")),
                TextSplit.CONTENT,
                FinishReason.STOP));
    assertTrue(called.path("content").isNull(), called.toString());
    JsonNode plain =
        message(auto, emptyOutput("", List.of(), TextSplit.CONTENT, FinishReason.STOP));
    assertEquals("", plain.path("content").asText(null));
    // forced: always ""; a streamed finishing step of a forced call has no empty content part
    ChatPlan required = plan(null, null, TOOLS + ",\"tool_choice\":\"required\"");
    JsonNode forced =
        message(required, emptyOutput("", List.of(), TextSplit.CONTENT, FinishReason.LENGTH));
    assertEquals("", forced.path("content").asText(null));
    ChatPlan streamed = plan(null, null, TOOLS + ",\"tool_choice\":\"required\",\"stream\":true");
    List<JsonNode> d =
        deltas(streamed, emptyOutput("", List.of(), TextSplit.CONTENT, FinishReason.LENGTH));
    assertEquals("{}", d.get(0).toString());
  }
}
