package dev.troupe.engine.template;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.engine.ChatTemplate.TemplateException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * Templates are data, never a threat: each resource a template can consume is bounded, and every
 * breach is a {@link TemplateException} naming the limit, raised before the memory is allocated.
 * The first tests are the bombs of issue 9 (each killed or froze a worker before).
 */
class JinjaLimitsTest {

  private static String render(String template, Map<String, Object> vars) {
    return JinjaTemplate.compile(template).render(vars);
  }

  private static TemplateException refused(String template, String reason) {
    TemplateException e =
        assertThrows(TemplateException.class, () -> render(template, Map.of()), template);
    assertTrue(e.getMessage().contains(reason), template + " -> " + e.getMessage());
    return e;
  }

  /** A 16M-character string, as the issue's bomb builds it. */
  private static final String SIXTEEN_M = "{% set s = 'a' * 16000000 %}";

  @Test
  void theBombsOfIssue9AreTemplateErrors() {
    // StackOverflowError in the parser, which exited the JVM
    refused("{{ " + "(".repeat(600) + "1" + ")".repeat(600) + " }}", "nesting deeper than 100");
    // OutOfMemoryError: a 2-billion-space indent
    refused("{{ 'x\\nx'|indent(2000000000) }}", "over the limit");
    // OutOfMemoryError: the limit on * did not cover ~
    refused(SIXTEEN_M + "{% set t = s~s~s~s~s~s~s~s %}{{ t|length }}", "over the limit");
    // spun forever on the engine thread
    assertEquals("1", render("{{ 1 ** 9223372036854775807 }}", Map.of()));
    // ArithmeticException, which restarted the worker
    assertEquals("1" + "0".repeat(100), render("{{ 10**100 }}", Map.of()));
  }

  @Test
  void everyStringOperationAsksBeforeBuilding() {
    for (String op :
        List.of(
            "{{ s * 2 }}",
            "{{ s ~ s }}",
            "{{ s + s }}",
            "{{ s|indent(1000000, first=true) }}",
            "{{ 'x'|indent(20000000, first=true) }}",
            "{{ s|center(20000000) }}",
            "{{ 'x'.center(20000000) }}",
            "{{ 'x'.ljust(20000000) }}",
            "{{ 'x'.rjust(20000000) }}",
            "{{ 'x'.zfill(20000000) }}",
            "{{ [s, s]|join }}",
            "{{ ','.join([s, s]) }}",
            "{{ s|replace('a', 'bb') }}",
            "{{ s.replace('a', 'bb') }}",
            "{{ '{}{}'.format(s, s) }}",
            "{{ '{0}{0}'.format(s) }}",
            "{{ [s, s] }}",
            "{{ [s, s]|tojson }}",
            "{{ [[1, [2, [3, [4]]]]]|tojson(indent=20000000) }}",
            "{{ s|upper ~ s }}",
            "{{ ('<' * 5000000)|e }}",
            "{{ strftime_now('%B' * 2000000) }}")) refused(SIXTEEN_M + op, "over the limit");
    refused("{{ [1] * 20000000 }}", "over the limit");
    refused("{{ [1, 2] * 10000000 }}", "over the limit");
    refused("{{ (1,) * 20000000 }}", "over the limit");
  }

  @Test
  void valuesBuiltStepByStepHitTheAllocationBudget() {
    // 1000 distinct 1M-character strings kept alive: each is allowed, together they are not
    refused(
        "{% set s = 'a' * 1000000 %}{% set ns = namespace(l=[]) %}{% for i in range(1000) %}"
            + "{% set ns.l = ns.l + [s ~ i] %}{% endfor %}{{ ns.l|length }}",
        "allocated more than");
    // splitting a long string into one-character strings costs ~50 bytes each
    refused(SIXTEEN_M + "{{ s|list|length }}", "allocated more than");
  }

  @Test
  void nestingIsBoundedWhereverItComesFrom() {
    refused("{{ " + "-".repeat(150) + "1 }}", "nesting deeper than 100");
    refused("{{ " + "not ".repeat(150) + "1 }}", "nesting deeper than 100");
    refused("{% if true %}".repeat(150) + "{% endif %}".repeat(150), "nesting deeper than 100");
    refused("{{ " + "[".repeat(150) + "]".repeat(150) + " }}", "nesting deeper than 100");
    // left-deep chains parse without recursion but evaluate recursively
    refused("{{ 1" + "+1".repeat(5000) + " }}", "nesting deeper than 500");
    refused("{{ 'a'" + "|upper".repeat(5000) + " }}", "nesting deeper than 500");
    assertEquals("301", render("{{ 1" + "+1".repeat(300) + " }}", Map.of()));
    refused("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "nesting deeper than 500");
    assertEquals(
        "ok",
        render(
            "{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{% else %}ok{% endif %}{% endmacro %}"
                + "{{ f(150) }}",
            Map.of()),
        "recursion as deep as Jinja2 itself allows renders");
    String deepList =
        "{% set ns = namespace(x=1) %}{% for i in range(100000) %}{% set ns.x = [ns.x] %}"
            + "{% endfor %}";
    for (String use :
        List.of("{{ ns.x }}", "{{ ns.x|tojson }}", "{{ ns.x == ns.x }}", "{{ ns.x < ns.x }}"))
      refused(deepList + use, "nesting deeper than 500");
    refused(
        "{% set ns = namespace(x=1) %}{% for i in range(100000) %}{% set ns.x = (ns.x,) %}"
            + "{% endfor %}{{ {ns.x: 1} }}",
        "nesting deeper than 500");
    // deep input (a cycle is the extreme case) is refused while it is copied in
    List<Object> cycle = new ArrayList<>();
    cycle.add(cycle);
    TemplateException e =
        assertThrows(TemplateException.class, () -> render("{{ x }}", Map.of("x", cycle)));
    assertTrue(e.getMessage().contains("nesting"), e.getMessage());
  }

  /**
   * The nesting limits keep the stack small: on a thread with 768 KB of stack (the JVM's default is
   * 1 MB; a render needs about 400 KB at the limits, measured interpreted, the worst case) every
   * nesting bomb ends at its limit, never in the stack-overflow fallback.
   */
  @Test
  void theNestingLimitsFitInADefaultThreadStack() throws Exception {
    String deep =
        "{% set ns = namespace(x=1) %}{% for i in range(100000) %}{% set ns.x = [ns.x] %}"
            + "{% endfor %}";
    List<String> bombs =
        List.of(
            "{{ " + "(".repeat(99) + "1" + ")".repeat(99) + " }}x",
            "{{ 1" + "+1".repeat(5000) + " }}",
            "{{ 'a'" + "|upper".repeat(5000) + " }}",
            "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
            "{% macro f(n) %}{% for i in [1] %}{{ f(n)|trim }}{% endfor %}{% endmacro %}{{ f(1) }}",
            deep + "{{ ns.x }}",
            deep + "{{ ns.x|tojson }}",
            deep + "{{ ns.x == ns.x }}");
    for (String bomb : bombs) {
      AtomicReference<Throwable> thrown = new AtomicReference<>();
      Thread t =
          new Thread(
              null,
              () -> {
                try {
                  render(bomb, Map.of());
                } catch (Throwable e) {
                  thrown.set(e);
                }
              },
              "small-stack",
              768 * 1024);
      t.start();
      t.join();
      if (bomb.endsWith("x")) {
        assertEquals(null, thrown.get(), "99 nested parentheses are allowed");
        continue;
      }
      assertTrue(thrown.get() instanceof TemplateException, String.valueOf(thrown.get()));
      assertFalse(
          thrown.get().getMessage().contains("stack"),
          bomb.substring(0, 40) + ": " + thrown.get().getMessage());
    }
  }

  @Test
  void loopsAndStepsAndTimeAreBounded() {
    TemplateLimits small = TemplateLimits.DEFAULT.withMaxSteps(200_000);
    JinjaTemplate loops =
        JinjaTemplate.compile(
            "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}");
    TemplateException steps =
        assertThrows(TemplateException.class, () -> loops.withLimits(small).render(Map.of()));
    assertTrue(steps.getMessage().contains("200000 evaluation steps"), steps.getMessage());
    // a scan charges its length: 1000 membership tests over a 100k-item list (1000 loop steps)
    JinjaTemplate scans =
        JinjaTemplate.compile(
            "{% set l = range(100000)|list %}{% for i in range(1000) %}{{ -1 in l }}{% endfor %}");
    assertThrows(TemplateException.class, () -> scans.withLimits(small).render(Map.of()));
    JinjaTemplate slow =
        JinjaTemplate.compile(
                "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}")
            .withLimits(
                TemplateLimits.DEFAULT
                    .withMaxSteps(Long.MAX_VALUE)
                    .withMaxRenderTime(Duration.ofMillis(200)));
    TemplateException e = assertThrows(TemplateException.class, () -> slow.render(Map.of()));
    assertTrue(e.getMessage().contains("took longer than 200 ms"), e.getMessage());
  }

  @Test
  void outputAndSourceAreBounded() {
    refused(
        SIXTEEN_M.replace("16000000", "1000000") + "{% for i in range(20) %}{{ s }}{% endfor %}",
        "output exceeded");
    refused(
        "{% set s = 'a' * 10000000 %}{% macro m() %}{{ s }}{{ s }}{% endmacro %}{{ m() }}",
        "output exceeded");
    TemplateException e =
        assertThrows(
            TemplateException.class, () -> JinjaTemplate.compile("x".repeat((1 << 20) + 1)));
    assertTrue(e.getMessage().contains("over the limit"), e.getMessage());
  }

  @Test
  void unexpectedJavaExceptionsNeverEscape() {
    // each of these threw a Java exception (IllegalArgument, ClassCast, IndexOutOfBounds,
    // NumberFormat) past the interpreter before
    for (String t :
        List.of(
            "{{ '\\U00110000' }}",
            "{{ 'x'|trim(1) }}",
            "{{ 'x'|replace('a') }}",
            "{{ '{99999999999}'.format(1) }}",
            "{{ [1]|selectattr }}",
            "{{ 1.5|round(2000000000) }}",
            "{{ [1, 2]|tojson(indent=-1) }}"))
      try {
        render(t, Map.of());
      } catch (TemplateException expected) {
        // fine: an error of the template
      }
    assertEquals("1.5", render("{{ 1.5|round(2000000000) }}", Map.of()));
    assertEquals("[\n1,\n2\n]", render("{{ [1, 2]|tojson(indent=-1) }}", Map.of()));
  }
}
