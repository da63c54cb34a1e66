package dev.troupe.engine.toolcall;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/** tool_choice "required" and named functions: reading the constrained output as calls. */
class ForcedToolCallsTest {

  private static Supplier<String> ids() {
    AtomicInteger n = new AtomicInteger();
    return () -> "id" + n.getAndIncrement();
  }

  @Test
  void requiredArrayBecomesCalls() {
    String out =
        "[{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\", \"days\": 2.50}},"
            + " {\"name\": \"noop\", \"parameters\": {}}]";
    ToolCallParser p = ForcedToolCalls.required(ids());
    var x = p.extract(out);
    assertNull(x.content());
    assertEquals(List.of("get_weather", "noop"), x.calls().stream().map(ToolCall::name).toList());
    assertEquals("{\"city\": \"Paris\", \"days\": 2.5}", x.calls().get(0).arguments());
    assertEquals("{}", x.calls().get(1).arguments());
    Random r = new Random(1);
    for (int trial = 0; trial < 30; trial++) {
      ToolCallParser.Session s = ForcedToolCalls.required(ids()).open();
      List<ToolCallDelta> deltas = new ArrayList<>();
      int i = 0;
      while (i < out.length()) {
        int j = Math.min(out.length(), i + 1 + r.nextInt(5));
        deltas.addAll(s.push(out.substring(i, j)).deltas());
        i = j;
      }
      deltas.addAll(s.finish().deltas());
      StringBuilder a0 = new StringBuilder();
      List<String> names = new ArrayList<>();
      for (ToolCallDelta d : deltas) {
        if (d.id() != null) names.add(d.name());
        if (d.index() == 0 && d.arguments() != null) a0.append(d.arguments());
      }
      assertEquals(List.of("get_weather", "noop"), names);
      assertEquals("{\"city\": \"Paris\", \"days\": 2.5}", a0.toString());
    }
    // cut by max_tokens: the complete calls only
    assertEquals(
        1,
        p.extract("[{\"name\": \"a\", \"parameters\": {}}, {\"name\": \"b\", \"param")
            .calls()
            .size());
  }

  @Test
  void namedOutputIsTheArguments() {
    var x = ForcedToolCalls.named("pick", ids()).extract("{\"n\": 3}");
    assertEquals("pick", x.calls().get(0).name());
    assertEquals("{\"n\": 3}", x.calls().get(0).arguments());
    ToolCallParser.Session s = ForcedToolCalls.named("pick", ids()).open();
    List<ToolCallDelta> d = new ArrayList<>(s.push("{\"n\"").deltas());
    d.addAll(s.push(": 3}").deltas());
    d.addAll(s.finish().deltas());
    assertEquals("pick", d.get(0).name());
    assertEquals("{\"n\": 3}", d.get(0).arguments() + d.get(1).arguments());
  }
}
