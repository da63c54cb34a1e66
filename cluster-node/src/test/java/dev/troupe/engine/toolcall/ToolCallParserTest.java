package dev.troupe.engine.toolcall;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/**
 * hermes, llama3_json and mistral: vLLM's whole-output extraction (content, names, arguments as
 * Python's json.dumps spells them), and streaming in random chunks gives the same content and, per
 * call, one header plus argument fragments that concatenate to the same arguments.
 */
class ToolCallParserTest {

  private static Supplier<String> ids() {
    AtomicInteger n = new AtomicInteger();
    return () -> "id" + n.getAndIncrement();
  }

  private static final String ARGS_IN =
      "{\"a\":1,\"b\":[1.50,\"x\\u00e9\\n\",true,null],\"c\":{},\"d\":-0,\"e\":1e5}";
  private static final String ARGS_OUT =
      "{\"a\": 1, \"b\": [1.5, \"xé\\n\", true, null], \"c\": {}, \"d\": 0, \"e\": 100000.0}";

  @Test
  void hermes() {
    ToolCallParser p = ToolCallParser.named("hermes", ids());
    String out =
        "Let me look.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
            + ARGS_IN
            + "}\n</tool_call>\n"
            + "<tool_call>{\"arguments\": {}, \"name\": \"noop\"}</tool_call>trailing text";
    var x = p.extract(out);
    assertEquals("Let me look.\n", x.content());
    assertEquals(List.of("get_weather", "noop"), x.calls().stream().map(ToolCall::name).toList());
    assertEquals(ARGS_OUT, x.calls().get(0).arguments());
    assertEquals("{}", x.calls().get(1).arguments());
    streamMatches(p, out, "Let me look.\n", x.calls());
    // unterminated last call is still parsed
    var y = p.extract("<tool_call>{\"name\": \"f\", \"arguments\": {\"k\": \"v\"}}");
    assertNull(y.content());
    assertEquals("{\"k\": \"v\"}", y.calls().get(0).arguments());
    // malformed: no calls, everything is content
    String bad = "x<tool_call>{\"name\": \"f\", \"arguments\": {\"k\": }}</tool_call>";
    assertEquals(bad, p.extract(bad).content());
    assertTrue(p.extract(bad).calls().isEmpty());
    String plain = "no calls here, just text with <tool and stuff";
    assertEquals(plain, p.extract(plain).content());
    streamMatches(p, plain, plain, List.of());
  }

  @Test
  void llama3Json() {
    ToolCallParser p = ToolCallParser.named("llama3_json", ids());
    String out =
        "{\"name\": \"get_weather\", \"parameters\": "
            + ARGS_IN
            + "}; {\"type\": \"function\", \"name\": \"g\", \"arguments\": {}}";
    var x = p.extract(out);
    assertNull(x.content());
    assertEquals(List.of("get_weather", "g"), x.calls().stream().map(ToolCall::name).toList());
    assertEquals(ARGS_OUT, x.calls().get(0).arguments());
    streamMatches(p, out, "", x.calls());
    var tagged = p.extract("<|python_tag|>{\"name\": \"f\", \"parameters\": {\"q\": 2}}");
    assertEquals("{\"q\": 2}", tagged.calls().get(0).arguments());
    assertEquals("Hello {\"name\": 1}", p.extract("Hello {\"name\": 1}").content());
    assertEquals("{\"name\": \"f\"} oops", p.extract("{\"name\": \"f\"} oops").content());
    streamMatches(p, "Hello there", "Hello there", List.of());
  }

  @Test
  void mistral() {
    ToolCallParser p = ToolCallParser.named("mistral", ids());
    assertTrue(p.needsSpecialTokens());
    String out =
        "Sure.[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": "
            + ARGS_IN
            + "}, {\"name\": \"g\", \"arguments\": {}}]";
    var x = p.extract(out);
    assertEquals("Sure.", x.content());
    assertEquals(List.of("get_weather", "g"), x.calls().stream().map(ToolCall::name).toList());
    assertEquals(ARGS_OUT, x.calls().get(0).arguments());
    streamMatches(ToolCallParser.named("mistral", ids()), out, "Sure.", x.calls());
    String v11 = "[TOOL_CALLS]get_weather[ARGS]" + ARGS_IN + "[TOOL_CALLS]g[ARGS]{}";
    var y = p.extract(v11);
    assertNull(y.content());
    assertEquals(List.of("get_weather", "g"), y.calls().stream().map(ToolCall::name).toList());
    assertEquals(ARGS_OUT, y.calls().get(0).arguments());
    streamMatches(ToolCallParser.named("mistral", ids()), v11, "", y.calls());
    assertEquals("[{\"name\": broken", p.extract("[TOOL_CALLS][{\"name\": broken").content());
    assertTrue(ToolCallIds.mistral().matches("[A-Za-z0-9]{9}"));
    assertTrue(ToolCallIds.vllm().matches("chatcmpl-tool-[0-9a-f]{32}"));
  }

  @Test
  void pythonNumbersAndStrings() {
    String[][] cases = {
      {"1.0", "1.0"},
      {"1e5", "100000.0"},
      {"1e16", "1e+16"},
      {"1.5e-7", "1.5e-07"},
      {"0.0001", "0.0001"},
      {"0.00001", "1e-05"},
      {"123456789012345678901", "123456789012345678901"},
      {"-0", "0"},
      {"-0.0", "-0.0"},
      {"1e400", "Infinity"},
      {"2.5E3", "2500.0"},
      {"0.1", "0.1"}
    };
    for (String[] c : cases) assertEquals(c[1], PythonJsonWriter.pythonNumber(c[0]), c[0]);
    StringBuilder sb = new StringBuilder();
    dev.troupe.engine.template.PythonFormat.jsonEscape("a\u0001\"\\\u2028é\t", sb, false);
    assertEquals("a\\u0001\\\"\\\\\u2028é\\t", sb.toString());
  }

  /** Random chunkings give the extraction's content and calls. */
  private static void streamMatches(
      ToolCallParser p, String out, String content, List<ToolCall> calls) {
    Random r = new Random(out.hashCode());
    for (int trial = 0; trial < 40; trial++) {
      ToolCallParser.Session s = p.open();
      StringBuilder text = new StringBuilder();
      List<ToolCallDelta> deltas = new ArrayList<>();
      int i = 0;
      while (i < out.length()) {
        int j = Math.min(out.length(), i + 1 + r.nextInt(6));
        var step = s.push(out.substring(i, j));
        text.append(step.content());
        deltas.addAll(step.deltas());
        i = j;
      }
      var step = s.finish();
      text.append(step.content());
      deltas.addAll(step.deltas());
      assertEquals(content, text.toString(), "content of " + out);
      List<String> names = new ArrayList<>();
      List<StringBuilder> args = new ArrayList<>();
      for (ToolCallDelta d : deltas) {
        if (d.id() != null) {
          assertEquals(names.size(), d.index());
          assertEquals("function", d.type());
          names.add(d.name());
          args.add(new StringBuilder());
        } else {
          args.get(d.index()).append(d.arguments());
        }
      }
      assertEquals(calls.stream().map(ToolCall::name).toList(), names, out);
      for (int k = 0; k < calls.size(); k++)
        assertEquals(calls.get(k).arguments(), args.get(k).toString());
    }
  }
}
