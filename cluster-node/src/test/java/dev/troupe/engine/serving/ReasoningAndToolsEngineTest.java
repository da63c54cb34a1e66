package dev.troupe.engine.serving;

import static dev.troupe.engine.serving.Driver.choices;
import static dev.troupe.engine.serving.Driver.finish;
import static dev.troupe.engine.serving.Driver.text;
import static dev.troupe.engine.serving.Driver.tokens;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.troupe.engine.core.EngineSettings;
import dev.troupe.engine.output.RequestUpdate;
import dev.troupe.engine.output.RequestUpdate.ChoiceUpdate;
import dev.troupe.engine.sampling.FinishReason;
import dev.troupe.engine.structured.StructuredOutputSettings;
import dev.troupe.engine.toolcall.ToolCallDelta;
import dev.troupe.protocol.cluster.GenerationRequest;
import dev.troupe.protocol.cluster.SamplingDefaults;
import dev.troupe.protocol.cluster.SamplingParams;
import dev.troupe.protocol.cluster.StructuredOutputsParams;
import dev.troupe.protocol.cluster.ToolCalling;
import dev.troupe.scheduler.SchedulingPolicy;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * The output processor's reasoning split and tool calls on the demo model (random weights, qwen3
 * reasoning parser): the constraint makes the output's shape, the parsers read it, in streamed and
 * whole-output mode alike.
 */
class ReasoningAndToolsEngineTest {

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final int THINK_END =
      TestEngines.TEXT.tokenizer().tokenToId("</think>").getAsInt();

  static Driver engine() {
    EngineSettings settings = EngineSettings.small();
    return new Driver(
        Engine.create(
            "demo",
            TestEngines.runner(settings.numBlocks(), settings.blockSize()),
            TestEngines.TEXT,
            settings,
            SchedulingPolicy.FCFS,
            TestEngines.TEXT::compileTemplate,
            SamplingDefaults.NONE,
            "qwen3",
            StructuredOutputSettings.defaults()));
  }

  static String reasoning(List<RequestUpdate> updates, int choice) {
    StringBuilder sb = new StringBuilder();
    for (ChoiceUpdate c : choices(updates, choice)) sb.append(c.reasoning());
    return sb.toString();
  }

  /** A choice's calls assembled from its pieces: index → {id, name, arguments}. */
  static Map<Integer, String[]> calls(List<RequestUpdate> updates, int choice) {
    Map<Integer, String[]> out = new TreeMap<>();
    for (ChoiceUpdate c : choices(updates, choice))
      for (ToolCallDelta d : c.toolCalls()) {
        String[] call = out.computeIfAbsent(d.index(), k -> new String[] {null, null, ""});
        if (d.id() != null) {
          assertNull(call[0], "one header per call");
          call[0] = d.id();
          call[1] = d.name();
        }
        if (d.arguments() != null) call[2] += d.arguments();
      }
    return out;
  }

  static final StructuredOutputsParams COMPACT_OBJECT =
      StructuredOutputsParams.json(
              "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":9}},\"required\":[\"n\"]}",
              "structured_outputs.json")
          .withJsonOptions(true, false, null);

  @Test
  void reasoningIsSplitAndTheConstraintAppliesAfterIt() throws Exception {
    // the prompt opens the think block (a Qwen3-Thinking template does); </think> is biased so the
    // random model ends its reasoning after a few tokens
    for (boolean streamed : new boolean[] {true, false}) {
      try (Driver e = engine()) {
        SamplingParams p =
            SamplingParams.builder()
                .n(2)
                .temperature(1.0)
                .seed(3L)
                .maxTokens(80)
                .logitBias(Map.of(THINK_END, 100.0))
                .structuredOutputs(COMPACT_OBJECT)
                .build();
        e.add(
            GenerationRequest.builder("r")
                .prompt("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n")
                .sampling(p)
                .streamed(streamed)
                .build());
        List<RequestUpdate> u = e.drain().of("r");
        for (int i = 0; i < 2; i++) {
          assertTrue(tokens(u, i).contains(THINK_END), "the reasoning ended");
          JsonNode doc = JSON.readTree(text(u, i));
          assertTrue(doc.get("n").asInt() <= 9, text(u, i));
          assertTrue(!reasoning(u, i).contains("</think>"));
          assertEquals(FinishReason.STOP, finish(u, i).finishReason());
        }
      }
    }
  }

  @Test
  void thinkingDisabledMeansAllContent() {
    try (Driver e = engine()) {
      e.add(
          GenerationRequest.builder("d")
              .messages(List.of(Map.of("role", "user", "content", "hi")))
              .chatTemplateKwargs(Map.of("enable_thinking", false))
              .sampling(SamplingParams.builder().temperature(1.0).seed(1L).maxTokens(10).build())
              .streamed(true)
              .build());
      List<RequestUpdate> u = e.drain().of("d");
      assertEquals("", reasoning(u, 0));
      assertTrue(!text(u, 0).isEmpty() || tokens(u, 0).size() < 10);
    }
  }

  /**
   * Thinking off: otherwise an undecided output may start reasoning (the {@code <think>} token is
   * allowed next to the grammar's), which a random model does often where the grammar allows few
   * tokens, and then never ends it.
   */
  static final Map<String, Object> NO_THINKING = Map.of("enable_thinking", false);

  @Test
  void anUndecidedOutputMayStartReasoningInsteadOfFollowingTheGrammar() {
    // without thinking disabled, the first token is the grammar's or <think>; a seed where the
    // random model picks <think> shows the output going to reasoning, unconstrained
    int think = TestEngines.TEXT.tokenizer().tokenToId("<think>").getAsInt();
    try (Driver e = engine()) {
      e.add(
          GenerationRequest.builder("u")
              .prompt("call a tool")
              .sampling(
                  SamplingParams.builder()
                      .n(8)
                      .temperature(1.0)
                      .seed(5L)
                      .maxTokens(12)
                      .structuredOutputs(
                          StructuredOutputsParams.choice(
                              List.of("[x]"), "structured_outputs.choice"))
                      .build())
              .streamed(true)
              .build());
      List<RequestUpdate> u = e.drain().of("u");
      int reasoned = 0;
      for (int i = 0; i < 8; i++) {
        if (tokens(u, i).get(0) == think) {
          reasoned++;
          assertTrue(!reasoning(u, i).isEmpty() || tokens(u, i).size() < 3, "reasoning text");
        } else {
          assertEquals("[x]", text(u, i));
        }
      }
      assertTrue(reasoned > 0, "some choice started reasoning");
    }
  }

  static final String REQUIRED_SCHEMA =
      "{\"type\":\"array\",\"minItems\":1,\"maxItems\":2,\"items\":{\"anyOf\":[{\"properties\":{"
          + "\"name\":{\"type\":\"string\",\"enum\":[\"get_weather\"]},\"parameters\":{\"type\":\"object\","
          + "\"properties\":{\"city\":{\"type\":\"string\",\"maxLength\":5}},\"required\":[\"city\"]}},"
          + "\"required\":[\"name\",\"parameters\"]}]}}";

  @Test
  void requiredToolCallsComeOutAsCalls() throws Exception {
    for (boolean streamed : new boolean[] {true, false}) {
      try (Driver e = engine()) {
        e.add(
            GenerationRequest.builder("t")
                .prompt("call a tool")
                .chatTemplateKwargs(NO_THINKING)
                .sampling(
                    SamplingParams.builder()
                        .n(2)
                        .temperature(1.0)
                        .seed(5L)
                        .maxTokens(120)
                        .structuredOutputs(
                            StructuredOutputsParams.json(REQUIRED_SCHEMA, "tools")
                                .withJsonOptions(true, false, null))
                        .build())
                .toolCalling(ToolCalling.required(true))
                .streamed(streamed)
                .build());
        List<RequestUpdate> u = e.drain().of("t");
        for (int i = 0; i < 2; i++) {
          Map<Integer, String[]> calls = calls(u, i);
          assertTrue(!calls.isEmpty() && calls.size() <= 2, "calls: " + calls.size());
          for (String[] c : calls.values()) {
            assertTrue(c[0].startsWith("chatcmpl-tool-"), c[0]);
            assertEquals("get_weather", c[1]);
            String city = JSON.readTree(c[2]).get("city").asText();
            assertTrue(
                city.codePointCount(0, city.length()) <= 5, c[2]); // JSON Schema counts code points
          }
          assertEquals("", text(u, i), "forced calls leave no content");
          assertEquals(FinishReason.TOOL_CALLS, finish(u, i).finishReason());
        }
      }
    }
  }

  @Test
  void namedFunctionGetsOneCallAndFinishesWithStop() throws Exception {
    try (Driver e = engine()) {
      e.add(
          GenerationRequest.builder("n")
              .prompt("call a tool")
              .chatTemplateKwargs(NO_THINKING)
              .sampling(
                  SamplingParams.builder()
                      .temperature(1.0)
                      .seed(7L)
                      .maxTokens(60)
                      .structuredOutputs(COMPACT_OBJECT.withJsonOptions(true, false, null))
                      .build())
              .toolCalling(ToolCalling.named("pick"))
              .streamed(true)
              .build());
      List<RequestUpdate> u = e.drain().of("n");
      Map<Integer, String[]> calls = calls(u, 0);
      assertEquals(1, calls.size());
      assertEquals("pick", calls.get(0)[1]);
      assertTrue(JSON.readTree(calls.get(0)[2]).has("n"));
      assertEquals(
          FinishReason.STOP, finish(u, 0).finishReason(), "vLLM: a named call ends with stop");
    }
  }

  @Test
  void autoToolChoiceParsesWithEachParser() throws Exception {
    String hermes =
        "root ::= \"<tool_call>\\n{\\\"name\\\": \\\"get_weather\\\", \\\"arguments\\\": {\\\"city\\\": \\\"\" [a-z]{1,4} \"\\\"}}\\n</tool_call>\"";
    String llama =
        "root ::= \"{\\\"name\\\": \\\"get_weather\\\", \\\"parameters\\\": {\\\"city\\\": \\\"\" [a-z]{1,4} \"\\\"}}\"";
    String mistral =
        "root ::= \"[TOOL_CALLS][{\\\"name\\\": \\\"get_weather\\\", \\\"arguments\\\": {\\\"city\\\": \\\"\" [a-z]{1,4} \"\\\"}}]\"";
    String twoCalls =
        "root ::= call call\ncall ::= \"<tool_call>{\\\"name\\\": \\\"f\\\", \\\"arguments\\\": {}}</tool_call>\"";
    record Case(String parser, String grammar, boolean parallel, int calls) {}
    List<Case> cases =
        List.of(
            new Case("hermes", hermes, true, 1),
            new Case("llama3_json", llama, true, 1),
            new Case("mistral", mistral, true, 1),
            new Case("hermes", twoCalls, true, 2),
            new Case("hermes", twoCalls, false, 1));
    for (Case c : cases)
      for (boolean streamed : new boolean[] {true, false}) {
        try (Driver e = engine()) {
          e.add(
              GenerationRequest.builder("a")
                  .prompt("weather?")
                  .chatTemplateKwargs(NO_THINKING)
                  .sampling(
                      SamplingParams.builder()
                          .temperature(1.0)
                          .seed(2L)
                          // room for two calls (90 bytes) however the model spells them: a
                          // tighter budget makes the stop token the last one allowed (length)
                          .maxTokens(120)
                          .structuredOutputs(
                              StructuredOutputsParams.grammar(
                                  c.grammar(), "structured_outputs.grammar"))
                          .build())
                  .toolCalling(ToolCalling.auto(c.parser(), c.parallel()))
                  .streamed(streamed)
                  .build());
          List<RequestUpdate> u = e.drain().of("a");
          Map<Integer, String[]> calls = calls(u, 0);
          assertEquals(c.calls(), calls.size(), c + " streamed=" + streamed);
          List<String> names = new ArrayList<>();
          for (String[] call : calls.values()) {
            names.add(call[1]);
            assertTrue(JSON.readTree(call[2]).isObject(), call[2]);
          }
          assertTrue(names.contains("get_weather") || names.contains("f"), names.toString());
          assertEquals(FinishReason.TOOL_CALLS, finish(u, 0).finishReason(), c.toString());
          if (c.parser().equals("mistral"))
            assertTrue(calls.get(0)[0].matches("[A-Za-z0-9]{9}"), calls.get(0)[0]);
        }
      }
  }
}
