package dev.troupe.engine.structured.syntax;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.networknt.schema.JsonSchema;
import com.networknt.schema.JsonSchemaFactory;
import com.networknt.schema.SchemaValidatorsConfig;
import com.networknt.schema.SpecVersion;
import com.networknt.schema.ValidationMessage;
import dev.troupe.engine.structured.StructuredFixtures;
import dev.troupe.engine.structured.grammar.CompiledGrammar;
import dev.troupe.engine.structured.grammar.GrammarException;
import dev.troupe.engine.structured.grammar.GrammarMatcher;
import dev.troupe.engine.structured.grammar.Limits;
import dev.troupe.engine.structured.grammar.Walks;
import dev.troupe.engine.tokenizer.HfTokenizer;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * JSON Schema front end on real vocabularies: random walks over the token masks only produce
 * documents the networknt validator accepts (formats asserted), valid documents can be produced
 * token by token, and unsupported or invalid schemas are refused with a message.
 */
class JsonSchemaFrontEndTest {

  // random walks write numbers of any length
  private static final ObjectMapper JSON =
      new ObjectMapper(
              com.fasterxml.jackson.core.JsonFactory.builder()
                  .streamReadConstraints(
                      com.fasterxml.jackson.core.StreamReadConstraints.builder()
                          .maxNumberLength(1_000_000)
                          .build())
                  .build())
          .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);
  private static final JsonSchemaFactory FACTORY =
      JsonSchemaFactory.getInstance(SpecVersion.VersionFlag.V202012);
  private static final SchemaValidatorsConfig CONFIG =
      SchemaValidatorsConfig.builder().formatAssertionsEnabled(true).build();

  /**
   * A schema with documents it accepts, spelled as the grammar (compact or any whitespace) allows.
   */
  private record Case(String schema, List<String> valid) {}

  private static final List<Case> CASES =
      List.of(
          new Case(
              """
              {"type":"object","properties":{
                "name":{"type":"string","maxLength":12},
                "age":{"type":"integer","minimum":0,"maximum":150},
                "id":{"type":"string","format":"uuid"},
                "tags":{"type":"array","items":{"type":"string","maxLength":6},"maxItems":3},
                "address":{"type":"object","properties":{
                   "street":{"type":"string","maxLength":10},
                   "zip":{"type":"string","pattern":"^[0-9]{5}$"}},"required":["street"]}},
               "required":["name","age"]}""",
              List.of(
                  "{\"name\": \"Ann\", \"age\": 37}",
                  "{\"name\":\"B\\\"o\\u00e9\",\"age\":150,\"tags\":[\"x\",\"y\"],\"address\":{\"street\":\"Main\",\"zip\":\"12345\"}}",
                  "{\n  \"name\": \"\",\n  \"age\": 0,\n  \"id\": \"123e4567-e89b-12d3-a456-426614174000\"\n}")),
          new Case(
              """
              {"$defs":{"node":{"type":"object","properties":{
                  "value":{"type":"integer","minimum":-5,"maximum":5},
                  "children":{"type":"array","items":{"$ref":"#/$defs/node"},"maxItems":2}},
                 "required":["value"]}},
               "$ref":"#/$defs/node"}""",
              List.of(
                  "{\"value\": -5}",
                  "{\"value\": 1, \"children\": [{\"value\": 2, \"children\": []}, {\"value\": 0}]}")),
          new Case(
              """
              {"type":"object","properties":{
                "kind":{"enum":["a","b",3,null]},
                "c":{"const":{"x":[1,2]}},
                "v":{"anyOf":[{"type":"string","maxLength":3},{"type":"number","minimum":-1.5,"exclusiveMaximum":2.25}]},
                "n":{"type":["integer","null"]},
                "b":{"type":"boolean"}},
               "required":["kind","c","v","n"]}""",
              List.of(
                  "{\"kind\": null, \"c\": {\"x\":[1,2]}, \"v\": 2.2499, \"n\": null}",
                  "{\"kind\": 3, \"c\": {\"x\":[1,2]}, \"v\": \"abc\", \"n\": -12, \"b\": true}",
                  "{\"kind\": \"a\", \"c\": {\"x\":[1,2]}, \"v\": -1.5, \"n\": 0}")),
          new Case(
              """
              {"type":"object","properties":{"a":{"type":"boolean"}},
               "additionalProperties":{"type":"integer","minimum":1,"maximum":9}}""",
              List.of("{}", "{\"a\": false}", "{\"b\": 3, \"ab\": 4}", "{\"a\": true, \"x\": 1}")),
          new Case(
              """
              {"type":"array","prefixItems":[{"type":"string","maxLength":2},{"type":"number","minimum":0,"maximum":1}],
               "items":{"type":"boolean"},"minItems":1,"maxItems":4}""",
              List.of("[\"ab\"]", "[\"\", 0.5]", "[\"a\", 1, true, false]", "[\"a\", 0.000]")),
          new Case(
              """
              {"type":"object","properties":{"s":{"type":"string","minLength":2,"maxLength":4}},
               "required":["s"],"additionalProperties":false}""",
              List.of("{\"s\": \"\\n\\t\"}", "{\"s\": \"\\u00e9\\u4e2d€x\"}", "{\"s\": \"ab\"}")),
          new Case(
              """
              {"type":"object","properties":{
                "x":{"type":"number","exclusiveMinimum":-0.25,"maximum":0.125},
                "i":{"type":"integer","exclusiveMinimum":-3,"exclusiveMaximum":1000}},"required":["x","i"]}""",
              List.of(
                  "{\"x\": -0.24, \"i\": -2}",
                  "{\"x\": 0.125, \"i\": 999}",
                  "{\"x\": 0, \"i\": 0}",
                  "{\"x\": 0.0001, \"i\": 10}")));

  @ParameterizedTest
  @ValueSource(strings = {"qwen3", "llama3"})
  void walksProduceValidDocumentsAndValidDocumentsAreReachable(String model) throws Exception {
    HfTokenizer tok = StructuredFixtures.tokenizer(model);
    Random r = new Random(11);
    byte[] closers = "\"}]".getBytes();
    for (Case c : CASES) {
      JsonNode schema = JSON.readTree(c.schema());
      JsonSchema validator = FACTORY.getSchema(schema, CONFIG);
      for (boolean compact : new boolean[] {false, true}) {
        var g =
            JsonSchemaConverter.convert(
                schema,
                new JsonSchemaConverter.Options(
                    !compact, null, false, JsonSchemaConverter.Options.DEFAULT_MAX_WHITESPACE));
        CompiledGrammar cg =
            CompiledGrammar.compile(g, StructuredFixtures.vocabulary(model), Limits.defaults());
        int finished = 0;
        // 60 walks: unbounded decimals with llama3's 3-digit tokens finish about 40% of the time
        for (int i = 0; i < 60; i++) {
          Walks.Walk w = Walks.walk(cg, r, 400, 1.0, closers, 0.5);
          if (!w.terminated()) continue;
          finished++;
          JsonNode doc = JSON.readTree(w.text());
          Set<ValidationMessage> errors = validator.validate(doc);
          assertTrue(errors.isEmpty(), c.schema() + "\n" + w.text() + "\n" + errors);
          if (compact)
            assertTrue(!w.text().contains("\n"), "compact output has no newlines: " + w.text());
        }
        assertTrue(finished >= 10, "walks finish (" + finished + "/60) for " + c.schema());
        if (compact) continue;
        for (String doc : c.valid()) {
          assertTrue(
              validator.validate(JSON.readTree(doc)).isEmpty(), "the sample is valid: " + doc);
          GrammarMatcher m = Walks.feed(cg, tok.encode(doc, false));
          assertTrue(m.canTerminate(), "complete after " + doc);
        }
      }
    }
  }

  /**
   * Every format's output passes an independent parser (java.time, java.net, an RFC 5322 regex).
   */
  @ParameterizedTest
  @ValueSource(
      strings = {
        "date",
        "time",
        "date-time",
        "email",
        "uuid",
        "uri",
        "ipv4",
        "ipv6",
        "hostname",
        "duration"
      })
  void formatsProduceParsableValues(String format) throws Exception {
    JsonNode schema = JSON.readTree("{\"type\":\"string\",\"format\":\"" + format + "\"}");
    CompiledGrammar cg =
        CompiledGrammar.compile(
            JsonSchemaConverter.convert(schema, JsonSchemaConverter.Options.defaults()),
            StructuredFixtures.vocabulary("qwen3"),
            Limits.defaults());
    Random r = new Random(format.hashCode());
    int finished = 0;
    for (int i = 0; i < 60; i++) {
      Walks.Walk w = Walks.walk(cg, r, 200, 0.9, "\"".getBytes(), 0.2);
      if (!w.terminated()) continue;
      finished++;
      String v = JSON.readTree(w.text()).asText();
      assertTrue(FormatReference.valid(format, v), format + ": " + v);
    }
    assertTrue(finished >= 15, format + " walks finish: " + finished);
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "{\"type\":\"strin\"}",
        "false",
        "{\"type\":\"array\",\"uniqueItems\":true}",
        "{\"$ref\":\"#/$defs/missing\"}",
        "{\"type\":\"string\",\"minLength\":5,\"maxLength\":2}",
        "{\"type\":\"string\",\"pattern\":\"(?=x)\"}",
        "{\"type\":\"string\",\"format\":\"color\"}",
        "{\"type\":\"integer\",\"minimum\":3,\"maximum\":2}",
        "{\"type\":\"object\",\"properties\":{\"a\":{\"not\":{}}}}",
        "{\"type\":\"string\",\"pattern\":\"[0-9]+\",\"maxLength\":3}",
        "{\"allOf\":[{\"type\":\"string\"},{\"maxLength\":2}]}",
        "[1,2]"
      })
  void unsupportedOrInvalidSchemasAreRefused(String schema) throws Exception {
    JsonNode node = JSON.readTree(schema);
    GrammarException e =
        assertThrows(
            GrammarException.class,
            () -> JsonSchemaConverter.convert(node, JsonSchemaConverter.Options.defaults()));
    assertTrue(!e.getMessage().isBlank());
  }

  @ParameterizedTest
  @ValueSource(strings = {"qwen3"})
  void anyObjectGrammar(String model) throws Exception {
    CompiledGrammar cg =
        CompiledGrammar.compile(
            JsonSchemaConverter.anyObject(
                new JsonSchemaConverter.Options(
                    false, null, false, JsonSchemaConverter.Options.UNBOUNDED)),
            StructuredFixtures.vocabulary(model),
            Limits.defaults());
    Random r = new Random(5);
    int finished = 0;
    for (int i = 0; i < 40; i++) {
      Walks.Walk w = Walks.walk(cg, r, 300, 1.0, "\"}]".getBytes(), 0.6);
      if (!w.terminated()) continue;
      finished++;
      assertTrue(JSON.readTree(w.text()).isObject(), w.text());
    }
    assertTrue(finished > 10);
    String doc = "{\"a\": [1, {\"b\": null}], \"c\": \"d\"}";
    assertTrue(
        Walks.feed(cg, StructuredFixtures.tokenizer(model).encode(doc, false)).canTerminate());
    assertEquals(
        false,
        cg.newMatcher().isAllowed(StructuredFixtures.tokenizer(model).encode("[", false)[0]));
  }
}
