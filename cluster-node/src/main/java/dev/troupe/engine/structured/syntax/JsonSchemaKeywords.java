package dev.troupe.engine.structured.syntax;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Iterator;
import java.util.Map;
import java.util.Set;

/** Which JSON Schema keywords the converter enforces, ignores or refuses; value helpers. */
final class JsonSchemaKeywords {

  private JsonSchemaKeywords() {}

  /**
   * Assertions a grammar cannot (or we do not) enforce: a schema using one is refused, since
   * ignoring it would let invalid output through.
   */
  private static final Set<String> REFUSED =
      Set.of(
          "not",
          "if",
          "then",
          "else",
          "contains",
          "minContains",
          "maxContains",
          "patternProperties",
          "propertyNames",
          "dependentRequired",
          "dependentSchemas",
          "dependencies",
          "unevaluatedItems",
          "multipleOf",
          "minProperties",
          "maxProperties",
          "$dynamicRef",
          "$recursiveRef",
          "additionalItems");

  static void checkSupported(JsonNode s, String hint) {
    Iterator<String> names = s.fieldNames();
    while (names.hasNext()) {
      String k = names.next();
      if (REFUSED.contains(k))
        throw JsonSchemaConverter.fail(
            "the keyword '" + k + "' is not supported (at " + hint + ")");
    }
    JsonNode unique = s.get("uniqueItems");
    if (unique != null && unique.asBoolean(true))
      throw JsonSchemaConverter.fail(
          "the keyword 'uniqueItems' is not supported (at " + hint + ")");
    JsonNode uneval = s.get("unevaluatedProperties");
    if (uneval != null && !(uneval.isBoolean() && !uneval.booleanValue()))
      throw JsonSchemaConverter.fail(
          "the keyword 'unevaluatedProperties' is only supported as false (at " + hint + ")");
    if (s.has("$ref")) {
      for (Map.Entry<String, JsonNode> e : s.properties()) {
        if (ANNOTATIONS.contains(e.getKey()) || e.getKey().equals("$ref")) continue;
        if (ASSERTIONS.contains(e.getKey()))
          throw JsonSchemaConverter.fail(
              "'" + e.getKey() + "' next to $ref is not supported (at " + hint + ")");
      }
    }
    int combinators = 0;
    for (String k : java.util.List.of("anyOf", "oneOf", "allOf")) if (s.has(k)) combinators++;
    if (combinators > 0) {
      for (Map.Entry<String, JsonNode> e : s.properties()) {
        String k = e.getKey();
        if (ASSERTIONS.contains(k)
            && !k.equals("anyOf")
            && !k.equals("oneOf")
            && !k.equals("allOf"))
          throw JsonSchemaConverter.fail(
              "'" + k + "' next to anyOf/oneOf/allOf is not supported (at " + hint + ")");
      }
      if (combinators > 1)
        throw JsonSchemaConverter.fail(
            "combining anyOf, oneOf and allOf in one schema is not supported (at " + hint + ")");
    }
  }

  /** Keywords that only describe (ignored). */
  static final Set<String> ANNOTATIONS =
      Set.of(
          "title",
          "description",
          "default",
          "examples",
          "deprecated",
          "readOnly",
          "writeOnly",
          "$schema",
          "$id",
          "$anchor",
          "$comment",
          "$defs",
          "definitions",
          "contentMediaType",
          "contentEncoding");

  /** Keywords that constrain (everything the converter enforces). */
  static final Set<String> ASSERTIONS =
      Set.of(
          "type",
          "enum",
          "const",
          "properties",
          "required",
          "additionalProperties",
          "items",
          "prefixItems",
          "minItems",
          "maxItems",
          "minLength",
          "maxLength",
          "pattern",
          "format",
          "minimum",
          "maximum",
          "exclusiveMinimum",
          "exclusiveMaximum",
          "anyOf",
          "oneOf",
          "allOf");

  /** A JSON value spelled without whitespace, or with xgrammar's ", " / ": " when asked. */
  static String compact(JsonNode v, boolean spaced) {
    StringBuilder sb = new StringBuilder();
    write(sb, v, spaced);
    return sb.toString();
  }

  private static void write(StringBuilder sb, JsonNode v, boolean spaced) {
    if (v.isObject()) {
      sb.append('{');
      boolean first = true;
      for (Map.Entry<String, JsonNode> e : v.properties()) {
        if (!first) sb.append(spaced ? ", " : ",");
        first = false;
        sb.append(JsonText.quote(e.getKey())).append(spaced ? ": " : ":");
        write(sb, e.getValue(), spaced);
      }
      sb.append('}');
    } else if (v.isArray()) {
      sb.append('[');
      for (int i = 0; i < v.size(); i++) {
        if (i > 0) sb.append(spaced ? ", " : ",");
        write(sb, v.get(i), spaced);
      }
      sb.append(']');
    } else if (v.isTextual()) {
      sb.append(JsonText.quote(v.asText()));
    } else {
      sb.append(v.toString());
    }
  }

  /** A non-negative integer keyword value, or {@code dflt} when absent. */
  static int count(JsonNode s, String key, int dflt, String hint) {
    JsonNode v = s.get(key);
    if (v == null) return dflt;
    if (!v.isIntegralNumber() && !(v.isNumber() && v.asDouble() == Math.rint(v.asDouble())))
      throw JsonSchemaConverter.fail(key + " must be a non-negative integer (at " + hint + ")");
    if (v.asDouble() < 0)
      throw JsonSchemaConverter.fail(key + " must be non-negative (at " + hint + ")");
    if (v.asDouble() > 100_000)
      throw JsonSchemaConverter.fail(
          key + " = " + v + " is too large to compile (at " + hint + ")");
    return v.asInt();
  }
}
