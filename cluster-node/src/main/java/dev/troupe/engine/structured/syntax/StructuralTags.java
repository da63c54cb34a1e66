package dev.troupe.engine.structured.syntax;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.engine.structured.grammar.Expr;
import dev.troupe.engine.structured.grammar.Grammar;
import dev.troupe.engine.structured.grammar.GrammarException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * vLLM's legacy structural tags: {@code {"structures": [{"begin", "schema", "end"}, …], "triggers":
 * [...]}}. The output is free text; when it completes a trigger, it must continue with the rest of
 * the {@code begin} of a structure whose {@code begin} starts with that trigger, then a JSON
 * document valid under its {@code schema}, then its {@code end}; then free text resumes. The output
 * may end anywhere in free text. (xgrammar's {@code compile_structural_tag(tags, triggers)}.) The
 * newer xgrammar form with a {@code format} object is not supported.
 */
public final class StructuralTags {

  private StructuralTags() {}

  public static Grammar parse(JsonNode tag, JsonSchemaConverter.Options options) {
    if (!tag.isObject()) throw new GrammarException("the structural tag must be a JSON object");
    if (tag.has("format") && !tag.has("structures"))
      throw new GrammarException(
          "the xgrammar structural-tag 'format' form is not supported; use 'structures' and 'triggers'");
    JsonNode structures = tag.get("structures");
    JsonNode triggers = tag.get("triggers");
    if (structures == null || !structures.isArray() || structures.isEmpty())
      throw new GrammarException("'structures' must be a non-empty array");
    if (triggers == null || !triggers.isArray() || triggers.isEmpty())
      throw new GrammarException("'triggers' must be a non-empty array of strings");
    List<String> trigs = new ArrayList<>();
    for (JsonNode t : triggers) {
      if (!t.isTextual() || t.asText().isEmpty())
        throw new GrammarException("'triggers' must be a non-empty array of non-empty strings");
      if (!trigs.contains(t.asText())) trigs.add(t.asText());
    }
    Grammar.Builder rules = new Grammar.Builder();
    rules.fresh("root");
    Map<String, List<Expr>> bodies = new LinkedHashMap<>();
    for (String t : trigs) bodies.put(t, new ArrayList<>());
    for (int i = 0; i < structures.size(); i++) {
      JsonNode s = structures.get(i);
      String begin = text(s, "begin", i);
      String end = text(s, "end", i);
      if (!s.has("schema")) throw new GrammarException("structures[" + i + "] has no 'schema'");
      String trigger = null;
      for (String t : trigs)
        if (begin.startsWith(t) && (trigger == null || t.length() > trigger.length())) trigger = t;
      if (trigger == null)
        throw new GrammarException("structures[" + i + "].begin does not start with any trigger");
      Grammar schema;
      try {
        schema = JsonSchemaConverter.convert(s.get("schema"), options);
      } catch (GrammarException e) {
        throw new GrammarException("structures[" + i + "].schema: " + e.getMessage(), e);
      }
      Expr json = Grammar.embed(rules, schema, "s" + i);
      bodies
          .get(trigger)
          .add(Expr.seq(Expr.literal(begin.substring(trigger.length())), json, Expr.literal(end)));
    }
    List<String> used = new ArrayList<>();
    List<Expr> dispatch = new ArrayList<>();
    for (var e : bodies.entrySet()) {
      if (e.getValue().isEmpty()) continue; // a trigger no structure uses constrains nothing
      used.add(e.getKey());
      dispatch.add(Expr.alt(e.getValue()));
    }
    rules.rule("root", new Expr.TagDispatch(used, dispatch));
    return rules.build("root");
  }

  private static String text(JsonNode s, String field, int i) {
    JsonNode v = s.get(field);
    if (v == null || !v.isTextual())
      throw new GrammarException("structures[" + i + "]." + field + " must be a string");
    return v.asText();
  }
}
