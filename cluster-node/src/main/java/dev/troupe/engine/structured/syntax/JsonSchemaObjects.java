package dev.troupe.engine.structured.syntax;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.engine.structured.grammar.CodePointSet;
import dev.troupe.engine.structured.grammar.Expr;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/** Objects and arrays of a JSON schema, and the "any JSON value" rules. */
final class JsonSchemaObjects {

  private final JsonSchemaConverter c;

  JsonSchemaObjects(JsonSchemaConverter c) {
    this.c = c;
  }

  /** One member of an object: its key spelling and value. */
  private record Entry(Expr expr, boolean required) {}

  Expr object(JsonNode s, String hint, int depth) {
    Map<String, JsonNode> props = new LinkedHashMap<>();
    JsonNode properties = s.get("properties");
    if (properties != null) {
      if (!properties.isObject())
        throw JsonSchemaConverter.fail("properties must be an object (at " + hint + ")");
      properties.properties().forEach(e -> props.put(e.getKey(), e.getValue()));
    }
    Set<String> required = new java.util.LinkedHashSet<>();
    JsonNode req = s.get("required");
    if (req != null) {
      if (!req.isArray())
        throw JsonSchemaConverter.fail("required must be an array (at " + hint + ")");
      for (JsonNode r : req) {
        if (!r.isTextual())
          throw JsonSchemaConverter.fail("required must list strings (at " + hint + ")");
        required.add(r.asText());
      }
    }
    // additional members: a schema, any value, or none
    JsonNode additional = s.get("additionalProperties");
    if (additional == null && s.has("unevaluatedProperties"))
      additional = s.get("unevaluatedProperties");
    Expr additionalValue;
    if (additional == null) {
      boolean closed = c.options().closedObjects() || !props.isEmpty();
      additionalValue = closed ? null : c.any();
    } else if (additional.isBoolean()) {
      additionalValue = additional.booleanValue() ? c.any() : null;
    } else {
      additionalValue = c.schema(additional, hint + "_additional", depth + 1);
    }
    // required names that no property declares take the additional schema (or any value)
    for (String r : required)
      if (!props.containsKey(r)) {
        if (additional != null && additional.isBoolean() && !additional.booleanValue())
          throw JsonSchemaConverter.fail(
              "required property '"
                  + r
                  + "' is not allowed by additionalProperties (at "
                  + hint
                  + ")");
        props.put(r, additional != null && additional.isObject() ? additional : null);
      }
    List<Entry> entries = new ArrayList<>();
    for (Map.Entry<String, JsonNode> p : props.entrySet()) {
      Expr value =
          p.getValue() == null
              ? c.any()
              : c.schema(p.getValue(), hint + "_" + p.getKey(), depth + 1);
      Expr member = Expr.seq(JsonText.quoted(p.getKey()), c.colon(), value);
      entries.add(new Entry(member, required.contains(p.getKey())));
    }
    Expr extra = null;
    if (additionalValue != null)
      extra = Expr.seq(keyExcept(props.keySet()), c.colon(), additionalValue);
    boolean canBeEmpty = entries.stream().noneMatch(Entry::required);
    return c.bracketed("{", members(entries, extra, hint), canBeEmpty, "}");
  }

  /**
   * The members between the braces when there is at least one: declared entries in order (optional
   * ones may be left out), then any number of extra members, with commas exactly between present
   * members; null when the object can have no member.
   */
  private Expr members(List<Entry> entries, Expr extra, String hint) {
    int n = entries.size();
    // tail(i): the members from i on, each preceded by a comma
    Expr[] tail = new Expr[n + 1];
    tail[n] = extra == null ? Expr.empty() : Expr.star(Expr.seq(c.comma(), extra));
    int firstRequired = n;
    for (int i = 0; i < n; i++)
      if (entries.get(i).required()) {
        firstRequired = i;
        break;
      }
    // tails referenced more than once (by the chain and as a first-member continuation) get rules
    boolean shared = firstRequired > 0;
    String[] tailRule = new String[n + 1];
    for (int i = n; i >= 1; i--) {
      Entry e = entries.get(i - 1);
      Expr item = Expr.seq(c.comma(), e.expr());
      Expr next = tailRef(tail, tailRule, i, shared, hint);
      Expr body = e.required() ? Expr.seq(item, next) : Expr.seq(Expr.optional(item), next);
      tail[i - 1] = body;
    }
    List<Expr> firsts = new ArrayList<>();
    for (int i = 0; i <= Math.min(firstRequired, n - 1); i++)
      firsts.add(Expr.seq(entries.get(i).expr(), tailRef(tail, tailRule, i + 1, shared, hint)));
    if (firstRequired == n && extra != null)
      firsts.add(Expr.seq(extra, tailRef(tail, tailRule, n, shared, hint)));
    return firsts.isEmpty() ? null : Expr.alt(firsts);
  }

  private Expr tailRef(Expr[] tail, String[] tailRule, int i, boolean asRule, String hint) {
    if (!asRule) return tail[i];
    if (tailRule[i] == null) {
      tailRule[i] = c.rules().fresh(JsonSchemaConverter.sanitize(hint) + "_tail" + i);
      c.rules().rule(tailRule[i], tail[i]);
    }
    return Expr.ref(tailRule[i]);
  }

  /**
   * A JSON string key other than the declared names (so an extra member never repeats one); spelled
   * without escapes.
   */
  private Expr keyExcept(Set<String> names) {
    int[] plain = JsonText.PLAIN;
    if (names.isEmpty()) return c.plainString();
    return Expr.seq(
        Expr.literal("\""), except(new TreeMap<>(trie(names)), plain), Expr.literal("\""));
  }

  /** A character trie of the names: each node maps the next code point to its subtree. */
  private static Map<Integer, Object> trie(Set<String> names) {
    Map<Integer, Object> root = new TreeMap<>();
    for (String n : names) {
      Map<Integer, Object> node = root;
      for (int cp : n.codePoints().toArray()) {
        @SuppressWarnings("unchecked")
        Map<Integer, Object> next =
            (Map<Integer, Object>) node.computeIfAbsent(cp, k -> new TreeMap<>());
        node = next;
      }
      node.put(-1, Boolean.TRUE); // end marker
    }
    return root;
  }

  /** Strings over {@code alphabet} that are not in the trie (from this node on). */
  @SuppressWarnings("unchecked")
  private static Expr except(Map<Integer, Object> node, int[] alphabet) {
    List<Expr> options = new ArrayList<>();
    if (!node.containsKey(-1)) options.add(Expr.empty());
    List<Integer> used = new ArrayList<>();
    for (Map.Entry<Integer, Object> e : node.entrySet()) {
      if (e.getKey() < 0) continue;
      used.add(e.getKey());
      used.add(e.getKey());
      options.add(
          Expr.seq(
              Expr.chars(e.getKey(), e.getKey()),
              except((Map<Integer, Object>) e.getValue(), alphabet)));
    }
    int[] others =
        CodePointSet.subtract(alphabet, used.stream().mapToInt(Integer::intValue).toArray());
    if (others.length > 0)
      options.add(Expr.seq(new Expr.CharSet(others), Expr.star(new Expr.CharSet(alphabet))));
    return Expr.alt(options);
  }

  Expr array(JsonNode s, String hint, int depth) {
    int min = JsonSchemaKeywords.count(s, "minItems", 0, hint);
    int max = JsonSchemaKeywords.count(s, "maxItems", Expr.Repeat.UNBOUNDED, hint);
    List<Expr> prefix = new ArrayList<>();
    JsonNode items = s.get("items");
    JsonNode prefixItems = s.get("prefixItems");
    if (items != null && items.isArray()) {
      // draft 4-7 tuple form
      prefixItems = items;
      items = s.get("additionalItems") == null ? null : s.get("additionalItems");
    }
    if (prefixItems != null) {
      if (!prefixItems.isArray())
        throw JsonSchemaConverter.fail("prefixItems must be an array (at " + hint + ")");
      for (int i = 0; i < prefixItems.size(); i++)
        prefix.add(c.schema(prefixItems.get(i), hint + "_" + i, depth + 1));
    }
    Expr item;
    // like objects with properties, a tuple without 'items' is closed (xgrammar's strict mode)
    if (items == null) item = prefix.isEmpty() ? c.any() : null;
    else if (items.isBoolean()) item = items.booleanValue() ? c.any() : null;
    else item = c.schema(items, hint + "_item", depth + 1);
    int k = prefix.size();
    if (item == null) max = max == Expr.Repeat.UNBOUNDED ? k : Math.min(max, k);
    if (max != Expr.Repeat.UNBOUNDED && max < min)
      throw JsonSchemaConverter.fail(
          "no array length satisfies minItems/maxItems (at " + hint + ")");
    return c.bracketed("[", firstSlots(prefix, item, min, max), min == 0, "]");
  }

  /** At least one item and the rest, count within [min, max]; null when max is 0. */
  private Expr firstSlots(List<Expr> prefix, Expr item, int min, int max) {
    if (max == 0) return null;
    if (!prefix.isEmpty()) return Expr.seq(prefix.get(0), slots(prefix, item, 1, min, max));
    int rest = max == Expr.Repeat.UNBOUNDED ? max : max - 1;
    return Expr.seq(item, Expr.repeat(Expr.seq(c.comma(), item), Math.max(0, min - 1), rest));
  }

  /** Items from position j &gt; 0 on, each preceded by a comma, count within [min, max]. */
  private Expr slots(List<Expr> prefix, Expr item, int j, int min, int max) {
    if (max != Expr.Repeat.UNBOUNDED && j >= max) return Expr.empty();
    if (j < prefix.size()) {
      Expr here = Expr.seq(c.comma(), prefix.get(j), slots(prefix, item, j + 1, min, max));
      return j < min ? here : Expr.optional(here);
    }
    // repeated items from j on
    int lo = Math.max(0, min - j);
    int hi = max == Expr.Repeat.UNBOUNDED ? Expr.Repeat.UNBOUNDED : max - j;
    return Expr.repeat(Expr.seq(c.comma(), item), lo, hi);
  }

  /** Body of the shared {@code json_value} rule. */
  Expr anyValueBody() {
    return Expr.alt(
        anyObjectRef(),
        anyArrayRef(),
        c.plainString(),
        JsonSchemaScalars.number(
            com.fasterxml.jackson.databind.node.JsonNodeFactory.instance.objectNode(), "value"),
        Expr.literal("true"),
        Expr.literal("false"),
        Expr.literal("null"));
  }

  /** Any JSON object (the body, for {@code json_object}). */
  Expr anyObject() {
    return anyObjectRef();
  }

  private Expr anyObjectRef() {
    if (!c.rules().has("json_object")) {
      c.rules().fresh("json_object");
      Expr member = Expr.seq(c.plainString(), c.colon(), c.any());
      Expr members = Expr.seq(member, Expr.star(Expr.seq(c.comma(), member)));
      c.rules().rule("json_object", c.bracketed("{", members, true, "}"));
    }
    return Expr.ref("json_object");
  }

  private Expr anyArrayRef() {
    if (!c.rules().has("json_array")) {
      c.rules().fresh("json_array");
      Expr items = Expr.seq(c.any(), Expr.star(Expr.seq(c.comma(), c.any())));
      c.rules().rule("json_array", c.bracketed("[", items, true, "]"));
    }
    return Expr.ref("json_array");
  }
}
