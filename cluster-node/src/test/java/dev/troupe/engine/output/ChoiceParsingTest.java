package dev.troupe.engine.output;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.troupe.engine.reasoning.ReasoningParser;
import dev.troupe.engine.structured.StructuredFixtures;
import dev.troupe.engine.toolcall.ForcedToolCalls;
import dev.troupe.engine.toolcall.ToolCallDelta;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ChoiceParsingTest {
  @Test
  void requiredThroughReasoning() {
    var tok = StructuredFixtures.tokenizer("qwen3");
    ReasoningParser rp = ReasoningParser.named("qwen3", tok);
    String out = "[{\"name\": \"get_weather\", \"parameters\": {\"city\": \"ab\"}}]";
    ChoiceParsing cp =
        new ChoiceParsing(
            rp.open(tok.encode("call a tool", false), Map.of()),
            ForcedToolCalls.required(() -> "x"),
            true,
            false);
    List<ToolCallDelta> deltas = new ArrayList<>();
    StringBuilder content = new StringBuilder();
    for (int i = 0; i < out.length(); i += 3) {
      var p = cp.push(out.substring(i, Math.min(out.length(), i + 3)));
      deltas.addAll(p.toolCalls());
      content.append(p.content());
    }
    var p = cp.finish();
    deltas.addAll(p.toolCalls());
    content.append(p.content());
    assertEquals("", content.toString());
    assertEquals("get_weather", deltas.get(0).name());
  }

  /**
   * Where the text stands decides whether vLLM writes an empty part as "" or null: content only
   * (never reasoned: an empty output is content ""), in the reasoning, after it.
   */
  @Test
  void theSplitFollowsTheReasoningParser() {
    var tok = StructuredFixtures.tokenizer("qwen3");
    int[] plain = tok.encode("<|im_start|>assistant\n", false);
    int[] opened = tok.encode("<|im_start|>assistant\n<think>\n", false);
    ReasoningParser qwen3 = ReasoningParser.named("qwen3", tok);
    ReasoningParser r1 = ReasoningParser.named("deepseek_r1", tok);

    ChoiceParsing empty = new ChoiceParsing(qwen3.open(plain, Map.of()), null, true, false);
    empty.push("");
    empty.finish();
    assertEquals(RequestUpdate.Split.CONTENT, empty.split(), "nothing generated: content \"\"");

    ChoiceParsing thinking = new ChoiceParsing(qwen3.open(opened, Map.of()), null, true, false);
    thinking.push("so");
    assertEquals(RequestUpdate.Split.REASONING, thinking.split());
    thinking.push(" far</think>");
    thinking.finish();
    assertEquals(RequestUpdate.Split.AFTER_REASONING, thinking.split());

    ChoiceParsing undecided = new ChoiceParsing(qwen3.open(plain, Map.of()), null, true, false);
    undecided.push("<think>x");
    assertEquals(RequestUpdate.Split.REASONING, undecided.split());

    ChoiceParsing startsThinking = new ChoiceParsing(r1.open(plain, Map.of()), null, false, false);
    startsThinking.finish();
    assertEquals(RequestUpdate.Split.REASONING, startsThinking.split(), "R1 starts reasoning");

    assertEquals(
        RequestUpdate.Split.CONTENT,
        new ChoiceParsing(null, ForcedToolCalls.required(() -> "x"), true, false).split());
  }
}
