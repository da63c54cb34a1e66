package dev.troupe.engine.template;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.engine.ChatTemplate;
import dev.troupe.engine.ChatTemplate.TemplateException;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The sandbox: no Java object reachable, runaway templates stopped, errors are errors. */
class JinjaSandboxTest {

  private static String render(String template, Map<String, Object> vars) {
    return JinjaTemplate.compile(template).render(vars);
  }

  @Test
  void runawayLoopsHitTheStepBudget() {
    JinjaTemplate nested =
        JinjaTemplate.compile(
            "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}");
    TemplateException e =
        assertThrows(
            TemplateException.class,
            () -> nested.withLimits(TemplateLimits.DEFAULT.withMaxSteps(200_000)).render(Map.of()));
    assertTrue(e.getMessage().contains("budget"), e.getMessage());
    assertTrue(
        JinjaTemplate.DEFAULT_MAX_STEPS <= 10_000_000, "the default budget is finite and small");
  }

  @Test
  void unboundedRecursionIsAnError() {
    assertThrows(
        TemplateException.class,
        () -> render("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", Map.of()));
  }

  @Test
  void hugeOutputIsAnError() {
    assertThrows(TemplateException.class, () -> render("{{ 'x' * 1000000000 }}", Map.of()));
    JinjaTemplate small =
        JinjaTemplate.compile("{% for i in range(1000) %}0123456789{% endfor %}")
            .withLimits(TemplateLimits.DEFAULT.withMaxOutputChars(5_000));
    TemplateException e = assertThrows(TemplateException.class, () -> small.render(Map.of()));
    assertTrue(e.getMessage().contains("output"), e.getMessage());
  }

  @Test
  void noJavaObjectIsReachable() {
    assertThrows(TemplateException.class, () -> render("{{ x }}", Map.of("x", new Object())));
    assertEquals(
        "||",
        render(
            "{{ ''.__class__ }}|{{ messages.__class__ }}|{{ range.__globals__ }}",
            Map.of("messages", List.of())));
    assertThrows(TemplateException.class, () -> render("{{ ''.__class__.__mro__ }}", Map.of()));
    assertThrows(
        TemplateException.class,
        () -> render("{{ messages.pop() }}", Map.of("messages", List.of(1))));
    assertThrows(
        TemplateException.class,
        () -> render("{% set d = {} %}{{ d.update({'a': 1}) }}", Map.of()));
    assertThrows(TemplateException.class, () -> render("{% include 'x' %}", Map.of()));
  }

  @Test
  void inputsAreCopiedNotShared() {
    List<Object> list = new java.util.ArrayList<>(List.of(1, 2));
    assertEquals("[1, 2, 3]", render("{{ l + [3] }}", Map.of("l", list)));
    assertEquals(List.of(1, 2), list);
  }

  @Test
  void jacksonTreesAreConvertedToPlainValues() throws Exception {
    var tree =
        new com.fasterxml.jackson.databind.ObjectMapper()
            .readTree("{\"a\": [1, 2.5, null, true, \"x\"], \"big\": 123456789012}");
    assertEquals(
        "{\"a\": [1, 2.5, null, true, \"x\"], \"big\": 123456789012}|[1, 2.5, None, True, 'x']",
        render("{{ t | tojson }}|{{ t.a }}", Map.of("t", tree)));
  }

  @Test
  void raiseExceptionStopsRenderingWithTheTemplatesMessage() {
    TemplateException e =
        assertThrows(
            TemplateException.class,
            () ->
                render(
                    "before{{ raise_exception('Only user and assistant roles') }}after", Map.of()));
    assertEquals("Only user and assistant roles", e.getMessage());
  }

  @Test
  void syntaxErrorsNameTheLine() {
    TemplateException e =
        assertThrows(
            TemplateException.class, () -> JinjaTemplate.compile("ok\n\n{% if x %}unclosed"));
    assertTrue(e.getMessage().contains("line"), e.getMessage());
    assertThrows(TemplateException.class, () -> JinjaTemplate.compile("{{ 'unterminated }}"));
    assertThrows(TemplateException.class, () -> JinjaTemplate.compile("{% for %}"));
  }

  @Test
  void namedTemplatesAreChosenAsTransformersDoes() {
    JinjaChatTemplate t =
        JinjaChatTemplate.of(
            Map.of("default", "D{{ eos_token }}", "tool_use", "T{{ tools | length }}"),
            Map.of("eos_token", "</s>"));
    List<Map<String, Object>> messages = List.of(Map.of("role", "user", "content", "x"));
    assertEquals(
        "D</s>", t.render(new ChatTemplate.Input(messages, null, null, false, false, Map.of())));
    assertEquals(
        "T1",
        t.render(
            new ChatTemplate.Input(
                messages, List.of(Map.of("type", "function")), null, false, false, Map.of())));
    JinjaChatTemplate noDefault = JinjaChatTemplate.of(Map.of("rag", "R"), Map.of());
    assertThrows(
        TemplateException.class,
        () ->
            noDefault.render(new ChatTemplate.Input(messages, null, null, false, false, Map.of())));
  }

  @Test
  void continueFinalMessageCutsAfterTheFinalContentOrFails() {
    JinjaChatTemplate t =
        JinjaChatTemplate.of(
            "{% for m in messages %}<{{ m.role }}>{{ m.content | trim }}</{{ m.role }}>{% endfor"
                + " %}",
            Map.of());
    List<Map<String, Object>> messages =
        List.of(
            Map.of("role", "user", "content", "hi"),
            Map.of("role", "assistant", "content", "Once upon "));
    assertEquals(
        "<user>hi</user><assistant>Once upon",
        t.render(new ChatTemplate.Input(messages, null, null, false, true, Map.of())));
    JinjaChatTemplate dropping =
        JinjaChatTemplate.of("{% for m in messages %}<{{ m.role }}>{% endfor %}", Map.of());
    assertThrows(
        TemplateException.class,
        () -> dropping.render(new ChatTemplate.Input(messages, null, null, false, true, Map.of())));
    assertThrows(
        TemplateException.class,
        () -> t.render(new ChatTemplate.Input(messages, null, null, true, true, Map.of())));
  }
}
