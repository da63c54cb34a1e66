package dev.troupe.engine.template;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.engine.ChatTemplate.TemplateException;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Python's unbounded ints (within the size limit), exact int/float comparison, hash equality in
 * {@code unique}, the padding methods and the other operations the resource limits touch, rendered
 * as Python Jinja2 renders them.
 *
 * <p>Origin of the expected values: Debian {@code python3-jinja2} 3.1.6, {@code
 * ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)} as transformers configures
 * it, each template rendered once by hand (the outputs are copied here verbatim).
 */
class JinjaPythonValuesTest {

  private static String render(String template) {
    return JinjaTemplate.compile(template).render(Map.of());
  }

  @Test
  void integersAreUnboundedAsInPython() {
    assertEquals("1" + "0".repeat(100), render("{{ 10**100 }}"));
    assertEquals(
        "18446744073709551616|-9223372036854775809|9223372036854775808|9223372036854775808",
        render(
            "{{ 2**64 }}|{{ -2**63 - 1 }}|{{ 9223372036854775807 + 1 }}|{{ -9223372036854775808"
                + " // -1 }}"));
    assertEquals(
        "33333333333333333333|-14285714285714285715|5|-5",
        render("{{ 10**20 // 3 }}|{{ -(10**20) // 7 }}|{{ -(10**20) % 7 }}|{{ 10**20 % -7 }}"));
    assertEquals(
        "True|True|10.0|0.5|1e+20",
        render(
            "{{ 10**20 == 1e20 }}|{{ 10**20 > 1e19 }}|{{ 10**20 / 10**19 }}|{{ 2 ** -1 }}|{{"
                + " (10**20)|float }}"));
    assertEquals(
        "1|-1|0|1",
        render(
            "{{ 1 ** 9223372036854775807 }}|{{ (-1) ** 9223372036854775807 }}|{{ 0 **"
                + " 9223372036854775807 }}|{{ 5 ** 0 }}"));
    assertEquals(
        "123456789012345678901234567890|123456789012345678901234567890|100000000000000000000|100000000000000000000",
        render(
            "{{ 123456789012345678901234567890 }}|{{ '123456789012345678901234567890'|int }}|{{"
                + " (-10**20)|abs }}|{{ (10**20)|tojson }}"));
    assertEquals(
        "a|True|[1, 100000000000000000000]||[]|[]",
        render(
            "{{ {10**20: 'a'}[10**20] }}|{{ 10**20 in [10**20] }}|{{ [10**20, 1]|sort }}|{{"
                + " [1,2][10**20] }}|{{ [1,2,3][10**20:] }}|{{ [1,2,3][-10**20:] }}"));
    assertEquals(
        "1|10|1|21|100000000000000000000|100000000000000000001",
        render(
            "{{ 10**20 is odd }}|{{ 10**20 is even }}|{{ 10**20 is divisibleby 3 }}|{{"
                + " (10**20)|string|length }}|{{ 10**20 | round }}|{{ True + 10**20 }}"));
  }

  @Test
  void integerErrorsAreTemplateErrors() {
    for (String t :
        new String[] {
          "{{ 10**400 * 1.0 }}",
          "{{ 'x' * 10**20 }}",
          "{{ 0 ** -1 }}",
          "{{ 10.0 ** 400 }}",
          "{{ range(10**20)|length }}",
          "{{ 7 // 0 }}",
          "{{ 10**20 % 0 }}",
        }) assertThrows(TemplateException.class, () -> render(t), t);
    TemplateException range =
        assertThrows(TemplateException.class, () -> render("{{ range(100001)|length }}"));
    assertEquals(
        "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).",
        range.getMessage());
    assertEquals("100000", render("{{ range(100000)|length }}"));
  }

  @Test
  void hashingFollowsPython() {
    assertEquals(
        "[1, 2, 'a', (1, 2)]",
        render("{{ [1, 1.0, True, 2, 'a', 'A', (1, 2), (1, 2)]|unique|list }}"));
    TemplateException list = assertThrows(TemplateException.class, () -> render("{{ [1] in {} }}"));
    assertEquals("unhashable type: 'list'", list.getMessage());
    assertThrows(TemplateException.class, () -> render("{{ {[1]: 2} }}"));
    assertEquals("", render("{{ {'a': 1}[[1]] }}"), "Jinja2's getitem makes a TypeError undefined");
  }

  @Test
  void paddingAndRepetitionAsInPython() {
    assertEquals(
        "**ab**| abc  |  abcd |  ab  |ab---|   ab|00042|-0042|ab",
        render(
            "{{ 'ab'.center(6, '*') }}|{{ 'abc'.center(6) }}|{{ 'abcd'.center(7) }}|{{"
                + " 'ab'|center(6) }}|{{ 'ab'.ljust(5, '-') }}|{{ 'ab'.rjust(5) }}|{{"
                + " '42'.zfill(5) }}|{{ '-42'.zfill(5) }}|{{ 'ab'.center(-3) }}"));
    assertEquals(
        "x|[1, 1, 1]|[1, 1, 1]|(1, 1)|[]|a|-a-b-c-|-a-bc|['a', 'b', 'c', 'd']",
        render(
            "{{ 'x'|indent(-2) }}|{{ [1] * 3 }}|{{ 3 * [1] }}|{{ (1,) * 2 }}|{{ [1]*(-1) }}|{{"
                + " 'a'*True }}|{{ 'abc'.replace('', '-') }}|{{ 'abc'.replace('', '-', 2) }}|{{"
                + " 'a\\x0bb\\x0cc\\u2028d'.splitlines() }}"));
    assertEquals(
        "5|2.0|1.2|1.5|1200.0|3.0",
        render(
            "{{ 5|round }}|{{ 2.5|round }}|{{ 1.25|round(1) }}|{{ 1.5|round(400) }}|{{"
                + " 1234.5|round(-2) }}|{{ 2.1|round(0, 'ceil') }}"));
  }

  @Test
  void integersBeyondPythonsPrintableSizeAreRefusedBeforeComputing() {
    // Python computes 2**10**18 until memory runs out; here it is refused at once.
    TemplateException e =
        assertThrows(TemplateException.class, () -> render("{{ 2 ** 1000000000000000000 }}"));
    assertTrue(e.getMessage().contains("4300 digits"), e.getMessage());
    assertThrows(TemplateException.class, () -> render("{{ 10 ** 5000 }}"));
    assertEquals(4300, render("{{ 10 ** 4299 }}").length());
    assertThrows(TemplateException.class, () -> render("{{ " + "9".repeat(4301) + " }}"));
    assertThrows(TemplateException.class, () -> render("{{ (10 ** 3000) * (10 ** 3000) }}"));
  }
}
