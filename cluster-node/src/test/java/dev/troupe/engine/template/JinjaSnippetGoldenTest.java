package dev.troupe.engine.template;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.troupe.engine.ChatTemplate.TemplateException;
import java.io.IOException;
import java.io.InputStream;
import java.time.Clock;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * One Jinja feature per template (printing and reprs, operators, tests, filters, str methods,
 * slicing, loops, scoping, namespace, macros, whitespace control, errors), each compared with
 * Python Jinja2.
 *
 * <p>Origin of the expected values: {@code tools/tokenizer-golden/jinja_snippets.py}, real Python
 * Jinja2 (Debian {@code python3-jinja2}) configured as transformers' {@code
 * _compile_jinja_template}; output committed as {@code golden-jinja-snippets.json}.
 */
class JinjaSnippetGoldenTest {

  @Test
  @SuppressWarnings("unchecked")
  void everySnippetRendersAsJinja2() throws IOException {
    Map<String, Object> golden;
    try (InputStream in = getClass().getResourceAsStream("golden-jinja-snippets.json")) {
      golden = new ObjectMapper().readValue(in, new TypeReference<>() {});
    }
    assertTrue(((String) golden.get("origin")).contains("Jinja2"));
    Map<String, Object> vars = (Map<String, Object>) golden.get("vars");
    Clock clock =
        Clock.fixed(
            LocalDateTime.parse("2026-03-05T14:30:00").toInstant(ZoneOffset.UTC), ZoneOffset.UTC);
    List<String> failures = new ArrayList<>();
    int checked = 0;
    for (Map<String, Object> c : (List<Map<String, Object>>) golden.get("cases")) {
      String source = (String) c.get("template");
      String actual;
      try {
        actual = JinjaTemplate.compile(source).withClock(clock).render(vars);
      } catch (TemplateException e) {
        actual = "ERROR " + e.getMessage();
      }
      checked++;
      if (c.containsKey("error")) {
        String error = (String) c.get("error");
        if (!actual.startsWith("ERROR "))
          failures.add(source + "\n  expected " + error + "\n  but rendered " + actual);
        else if (error.startsWith("TemplateError: ")
            && !actual.equals("ERROR " + error.substring(15)))
          failures.add(source + "\n  expected " + error + "\n  but got " + actual);
      } else if (!c.get("expected").equals(actual)) {
        failures.add(source + "\n  expected " + c.get("expected") + "\n  actual   " + actual);
      }
    }
    assertEquals(
        "", String.join("\n", failures), failures.size() + " of " + checked + " snippets differ");
  }
}
