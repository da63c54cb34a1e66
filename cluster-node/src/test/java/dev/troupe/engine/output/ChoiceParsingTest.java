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
}
