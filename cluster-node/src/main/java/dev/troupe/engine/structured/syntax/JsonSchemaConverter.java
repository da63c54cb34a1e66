package dev.troupe.engine.structured.syntax;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.engine.structured.grammar.Expr;
import dev.troupe.engine.structured.grammar.Grammar;
import dev.troupe.engine.structured.grammar.GrammarException;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * JSON Schema → {@link Grammar} whose language is JSON documents valid under the schema, with
 * xgrammar's choices: properties in the schema's order (required ones mandatory), objects that
 * declare {@code properties} closed unless {@code additionalProperties} says otherwise (xgrammar's
 * strict mode, vLLM's default), {@code oneOf} read as {@code anyOf}, no whitespace before or after
 * the document. Keywords that constrain output in ways a grammar cannot guarantee ({@code
 * uniqueItems}, {@code not}, {@code if}, {@code patternProperties}, …) are refused rather than
 * ignored; annotations ({@code title}, {@code description}, {@code default}, …) and unknown
 * keywords are ignored, as JSON Schema says.
 */
public final class JsonSchemaConverter {

  /**
   * @param anyWhitespace allow whitespace ({@code [ \n\t]}) between tokens (vLLM's default); false
   *     gives xgrammar's compact form with {@code ", "} and {@code ": "} separators
   * @param whitespacePattern a regex for the whitespace between tokens (outlines' option), or null;
   *     it wins over the other two whitespace options
   * @param closedObjects objects without {@code additionalProperties} are closed even when they
   *     declare no properties (guidance's {@code disable_additional_properties})
   * @param maxWhitespace with {@code anyWhitespace}: at most this many whitespace characters in a
   *     row ({@link #UNBOUNDED}: any number, as xgrammar's default)
   */
  public record Options(
      boolean anyWhitespace, String whitespacePattern, boolean closedObjects, int maxWhitespace) {
    /** {@link #maxWhitespace} without a bound. */
    public static final int UNBOUNDED = -1;

    /**
     * lm-format-enforcer's default: a weak model that favours whitespace tokens (any model early in
     * RL training) would otherwise fill {@code max_tokens} with them.
     */
    public static final int DEFAULT_MAX_WHITESPACE = 12;

    public Options {
      if (maxWhitespace < UNBOUNDED)
        throw new IllegalArgumentException("maxWhitespace must be >= 0, or UNBOUNDED");
    }

    /** Any whitespace up to {@link #DEFAULT_MAX_WHITESPACE} in a row, open objects. */
    public static Options defaults() {
      return new Options(true, null, false, DEFAULT_MAX_WHITESPACE);
    }
  }

  static final int MAX_DEPTH = 64;

  private final JsonNode root;
  private final Options options;
  private final Grammar.Builder rules = new Grammar.Builder();
  private final Map<String, String> refRules = new java.util.HashMap<>();
  private final Map<JsonNode, Map<String, String>> nodeRules = new IdentityHashMap<>();
  private final Expr ws;
  private final Expr comma;
  private final Expr colon;
  private final JsonSchemaObjects objects;

  private JsonSchemaConverter(JsonNode root, Options options) {
    this.root = root;
    this.options = options;
    if (options.whitespacePattern() != null) {
      ws = RegexParser.parse(options.whitespacePattern());
    } else if (options.anyWhitespace()) {
      Expr blank = Expr.chars(' ', ' ', '\n', '\n', '\t', '\t');
      ws =
          options.maxWhitespace() == Options.UNBOUNDED
              ? Expr.star(blank)
              : Expr.repeat(blank, 0, options.maxWhitespace());
    } else {
      ws = null;
    }
    comma = ws == null ? Expr.literal(", ") : Expr.seq(ws, Expr.literal(","), ws);
    colon = ws == null ? Expr.literal(": ") : Expr.seq(ws, Expr.literal(":"), ws);
    objects = new JsonSchemaObjects(this);
  }

  /** Converts a schema (an object or a boolean) to a grammar whose root is the document. */
  public static Grammar convert(JsonNode schema, Options options) {
    JsonSchemaConverter c = new JsonSchemaConverter(schema, options);
    c.rules.fresh("root");
    c.refRules.put("#", "root");
    c.rules.rule("root", c.schema(schema, "root", 0));
    return c.rules.build("root");
  }

  /** The grammar of any JSON object ({@code json_object}). */
  public static Grammar anyObject(Options options) {
    JsonSchemaConverter c = new JsonSchemaConverter(null, options);
    c.rules.rule("root", c.objects.anyObject());
    return c.rules.build("root");
  }

  Expr ws() {
    return ws;
  }

  Expr comma() {
    return comma;
  }

  Expr colon() {
    return colon;
  }

  Options options() {
    return options;
  }

  /**
   * {@code open}, the members, {@code close}, with whitespace just inside the brackets (none in the
   * compact form); an empty container has one run of whitespace, not two, so a bound on whitespace
   * in a row holds there too.
   *
   * @param members one or more members (null: there can be none)
   * @param canBeEmpty whether the container may have no member
   */
  Expr bracketed(String open, Expr members, boolean canBeEmpty, String close) {
    Expr inner = ws == null ? Expr.empty() : ws;
    Expr filled = members == null ? null : Expr.seq(members, inner);
    Expr rest;
    if (filled == null) rest = Expr.empty();
    else rest = canBeEmpty ? Expr.optional(filled) : filled;
    return Expr.seq(Expr.literal(open), inner, rest, Expr.literal(close));
  }

  Grammar.Builder rules() {
    return rules;
  }

  /** The expression of a (sub)schema. */
  Expr schema(JsonNode s, String hint, int depth) {
    if (depth > MAX_DEPTH)
      throw fail(
          "the schema is nested more than " + MAX_DEPTH + " levels deep (each $ref counts as one)");
    if (s.isBoolean()) {
      if (s.booleanValue()) return any();
      throw fail("the schema 'false' at " + hint + " matches nothing");
    }
    if (!s.isObject()) throw fail("a schema must be an object or a boolean (at " + hint + ")");
    JsonSchemaKeywords.checkSupported(s, hint);
    if (s.has("$ref")) return ref(s.get("$ref"), hint, depth);
    if (s.has("allOf")) {
      JsonNode all = s.get("allOf");
      if (!all.isArray() || all.size() != 1)
        throw fail("allOf with more than one schema is not supported (at " + hint + ")");
      return schema(all.get(0), hint, depth + 1);
    }
    for (String k : List.of("anyOf", "oneOf")) {
      if (!s.has(k)) continue;
      JsonNode opts = s.get(k);
      if (!opts.isArray() || opts.isEmpty())
        throw fail(k + " must be a non-empty array (at " + hint + ")");
      List<Expr> alts = new ArrayList<>();
      for (int i = 0; i < opts.size(); i++)
        alts.add(schema(opts.get(i), hint + "_" + k + i, depth + 1));
      return Expr.alt(alts);
    }
    if (s.has("const")) return literal(s.get("const"));
    if (s.has("enum")) {
      JsonNode values = s.get("enum");
      if (!values.isArray() || values.isEmpty())
        throw fail("enum must be a non-empty array (at " + hint + ")");
      List<Expr> alts = new ArrayList<>();
      Set<String> seen = new LinkedHashSet<>();
      for (JsonNode v : values) if (seen.add(v.toString())) alts.add(literal(v));
      return Expr.alt(alts);
    }
    JsonNode type = s.get("type");
    if (type == null) return typed(inferType(s), s, hint, depth);
    if (type.isTextual()) return typed(type.asText(), s, hint, depth);
    if (type.isArray() && !type.isEmpty()) {
      List<Expr> alts = new ArrayList<>();
      for (JsonNode t : type) {
        if (!t.isTextual())
          throw fail("type must be a string or an array of strings (at " + hint + ")");
        alts.add(typed(t.asText(), s, hint, depth));
      }
      return Expr.alt(alts);
    }
    throw fail("type must be a string or an array of strings (at " + hint + ")");
  }

  private static String inferType(JsonNode s) {
    for (String k : List.of("properties", "additionalProperties", "required"))
      if (s.has(k)) return "object";
    for (String k : List.of("items", "prefixItems", "minItems", "maxItems"))
      if (s.has(k)) return "array";
    for (String k : List.of("minLength", "maxLength", "pattern", "format"))
      if (s.has(k)) return "string";
    for (String k : List.of("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"))
      if (s.has(k)) return "number";
    return null;
  }

  private Expr typed(String type, JsonNode s, String hint, int depth) {
    if (type == null) return any();
    switch (type) {
      case "string":
        return JsonSchemaScalars.string(this, s, hint);
      case "integer":
        return JsonSchemaScalars.integer(s, hint);
      case "number":
        return JsonSchemaScalars.number(s, hint);
      case "boolean":
        return Expr.alt(Expr.literal("true"), Expr.literal("false"));
      case "null":
        return Expr.literal("null");
      case "object":
        return ruleFor(s, hint, "object", () -> objects.object(s, hint, depth));
      case "array":
        return ruleFor(s, hint, "array", () -> objects.array(s, hint, depth));
      default:
        throw fail("unsupported type \"" + type + "\" (at " + hint + ")");
    }
  }

  /** A rule of its own for an object or array schema node, made once per node and type. */
  private Expr ruleFor(
      JsonNode s, String hint, String type, java.util.function.Supplier<Expr> body) {
    Map<String, String> byType = nodeRules.computeIfAbsent(s, k -> new java.util.HashMap<>());
    String existing = byType.get(type);
    if (existing != null) return Expr.ref(existing);
    String name = rules.fresh(sanitize(hint));
    byType.put(type, name);
    rules.rule(name, body.get());
    return Expr.ref(name);
  }

  /**
   * A {@code $ref}'s rule, made once per target. Its schema is converted one level deeper than the
   * reference: a chain of references nests like properties do and is bounded by {@link #MAX_DEPTH}
   * (a chain of 10,000 overflowed the compile thread's stack); a reference back to a target being
   * converted (a recursive schema) reuses its rule and nests nothing.
   */
  private Expr ref(JsonNode refNode, String hint, int depth) {
    if (!refNode.isTextual()) throw fail("$ref must be a string (at " + hint + ")");
    String ref = refNode.asText();
    String existing = refRules.get(ref);
    if (existing != null) return Expr.ref(existing);
    if (!ref.startsWith("#")) throw fail("only local references (#/...) are supported, not " + ref);
    JsonNode target;
    try {
      target = root.at(pointer(ref));
    } catch (IllegalArgumentException e) {
      throw fail("invalid $ref " + ref);
    }
    if (target == null || target.isMissingNode()) throw fail("unresolved $ref " + ref);
    String name = rules.fresh(sanitize(ref.substring(ref.lastIndexOf('/') + 1)));
    refRules.put(ref, name);
    rules.rule(name, schema(target, name, depth + 1));
    return Expr.ref(name);
  }

  private static String pointer(String ref) {
    // JSON pointer after '#', with percent-encoding undone
    String p = ref.substring(1);
    try {
      p =
          java.net.URLDecoder.decode(
              p.replace("+", "%2B"), java.nio.charset.StandardCharsets.UTF_8);
    } catch (IllegalArgumentException e) {
      throw fail("invalid $ref " + ref);
    }
    return p;
  }

  /** Any JSON value (shared recursive rules). */
  Expr any() {
    if (!rules.has("json_value")) {
      rules.fresh("json_value");
      rules.rule("json_value", objects.anyValueBody());
    }
    return Expr.ref("json_value");
  }

  /** A shared rule for a plain JSON string. */
  Expr plainString() {
    if (!rules.has("json_string")) {
      rules.fresh("json_string");
      rules.rule(
          "json_string",
          Expr.seq(Expr.literal("\""), Expr.star(JsonText.CHAR), Expr.literal("\"")));
    }
    return Expr.ref("json_string");
  }

  /** A literal JSON value (const / enum member), spelled compactly. */
  Expr literal(JsonNode v) {
    if (v.isTextual()) return JsonText.quoted(v.asText());
    return Expr.literal(JsonSchemaKeywords.compact(v, ws == null));
  }

  static String sanitize(String hint) {
    String s = hint.replaceAll("[^A-Za-z0-9_]", "_");
    if (s.isEmpty() || s.length() > 40) s = s.isEmpty() ? "schema" : s.substring(0, 40);
    return s;
  }

  static GrammarException fail(String message) {
    return new GrammarException(message);
  }
}
