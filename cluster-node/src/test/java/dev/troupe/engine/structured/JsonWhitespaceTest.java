package dev.troupe.engine.structured;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigException;
import com.typesafe.config.ConfigFactory;
import dev.troupe.engine.structured.grammar.Automaton;
import dev.troupe.engine.structured.grammar.AutomatonCompiler;
import dev.troupe.engine.structured.grammar.Limits;
import dev.troupe.engine.structured.syntax.JsonSchemaConverter;
import dev.troupe.protocol.cluster.StructuredOutputsParams;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * Whitespace in JSON constraints: at most {@code max-json-whitespace} (12) characters in a row
 * between tokens by default, empty objects and arrays included; {@code off} is vLLM's unbounded
 * whitespace; {@code disable_any_whitespace} and {@code whitespace_pattern} keep their meaning.
 */
class JsonWhitespaceTest {

  private static final String SCHEMA =
      "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"array\"},\"b\":{\"type\":\"object\"}},"
          + "\"required\":[\"a\"]}";

  private static Automaton automaton(StructuredOutputsParams p, int maxWhitespace) {
    return AutomatonCompiler.compile(
        StructuredOutputGrammars.of(p, maxWhitespace), Limits.defaults());
  }

  private static boolean matches(Automaton a, String text) {
    return a.matches(text.getBytes(StandardCharsets.UTF_8));
  }

  /** A document with {@code n} blanks in each gap, inside empty containers too. */
  private static String spaced(int n) {
    String w = " \n\t".repeat(n).substring(0, n);
    return "{" + w + "\"a\"" + w + ":" + w + "[" + w + "]" + w + "," + w + "\"b\"" + w + ":" + w
        + "{" + w + "}" + w + "}";
  }

  @Test
  void twelveBlanksInARowAreAllowedThirteenAreNot() {
    StructuredOutputsParams schema = StructuredOutputsParams.json(SCHEMA, "response_format");
    StructuredOutputsParams object = StructuredOutputsParams.jsonObject("response_format");
    for (StructuredOutputsParams p : new StructuredOutputsParams[] {schema, object}) {
      Automaton a = automaton(p, JsonSchemaConverter.Options.DEFAULT_MAX_WHITESPACE);
      assertTrue(matches(a, spaced(0)));
      assertTrue(matches(a, spaced(12)), "12 in every gap, empty containers included");
      assertFalse(matches(a, spaced(13)));
      assertFalse(matches(a, "{" + " ".repeat(13) + "}"), "one gap of 13 in an empty object");
      Automaton unbounded = automaton(p, JsonSchemaConverter.Options.UNBOUNDED);
      assertTrue(matches(unbounded, spaced(200)));
    }
  }

  @Test
  void theRequestsWhitespaceOptionsKeepTheirMeaning() {
    StructuredOutputsParams compact =
        StructuredOutputsParams.json(SCHEMA, "response_format").withJsonOptions(true, false, null);
    Automaton a = automaton(compact, JsonSchemaConverter.Options.DEFAULT_MAX_WHITESPACE);
    assertTrue(matches(a, "{\"a\": [], \"b\": {}}"));
    assertFalse(matches(a, "{\"a\":[],\"b\":{}}"), "xgrammar's compact separators exactly");
    StructuredOutputsParams pattern =
        StructuredOutputsParams.json(SCHEMA, "response_format")
            .withJsonOptions(false, false, "[ \\n\\t]*");
    Automaton p = automaton(pattern, JsonSchemaConverter.Options.DEFAULT_MAX_WHITESPACE);
    assertTrue(matches(p, spaced(40)), "an explicit pattern wins over the bound");
  }

  @Test
  void theBoundIsASettingAndPartOfTheCompiledGrammarsKey() {
    var reference = ConfigFactory.load().getConfig("troupe.worker.structured-outputs");
    assertEquals(12, StructuredOutputSettings.fromConfig(reference).maxJsonWhitespace());
    assertTrue(StructuredOutputSettings.fromConfig(reference).completeWithinMaxTokens());
    var off = ConfigFactory.parseString("max-json-whitespace = off").withFallback(reference);
    assertEquals(
        JsonSchemaConverter.Options.UNBOUNDED,
        StructuredOutputSettings.fromConfig(off).maxJsonWhitespace());
    var negative = ConfigFactory.parseString("max-json-whitespace = -3").withFallback(reference);
    assertThrows(
        ConfigException.BadValue.class, () -> StructuredOutputSettings.fromConfig(negative));

    GrammarCache cache = new GrammarCache(8, 1 << 30);
    StructuredOutputsParams p = StructuredOutputsParams.jsonObject("response_format");
    var vocabulary = StructuredFixtures.vocabulary("qwen3");
    var bounded =
        new StructuredOutputCompiler(() -> vocabulary, Limits.defaults(), cache, null, 1, 12);
    var unbounded =
        new StructuredOutputCompiler(
            () -> vocabulary,
            Limits.defaults(),
            cache,
            null,
            1,
            JsonSchemaConverter.Options.UNBOUNDED);
    assertTrue(bounded.compile(p) != unbounded.compile(p), "one cache, two grammars");
  }
}
