package dev.troupe.engine.structured.syntax;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.engine.structured.grammar.Expr;
import dev.troupe.engine.structured.grammar.GrammarException;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.math.RoundingMode;

/** Strings, integers and numbers of a JSON schema, with their constraints. */
final class JsonSchemaScalars {

  private JsonSchemaScalars() {}

  private static final Expr INTEGER =
      Expr.seq(
          Expr.optional(Expr.literal("-")),
          Expr.alt(
              Expr.literal("0"), Expr.seq(Expr.chars('1', '9'), Expr.star(Expr.chars('0', '9')))));

  private static final Expr NUMBER =
      Expr.seq(
          INTEGER,
          Expr.optional(Expr.seq(Expr.literal("."), Expr.plus(Expr.chars('0', '9')))),
          Expr.optional(
              Expr.seq(
                  Expr.chars('E', 'E', 'e', 'e'),
                  Expr.optional(Expr.chars('+', '+', '-', '-')),
                  Expr.plus(Expr.chars('0', '9')))));

  static Expr string(JsonSchemaConverter c, JsonNode s, String hint) {
    boolean lengths = s.has("minLength") || s.has("maxLength");
    int min = JsonSchemaKeywords.count(s, "minLength", 0, hint);
    int max = JsonSchemaKeywords.count(s, "maxLength", Expr.Repeat.UNBOUNDED, hint);
    if (max != Expr.Repeat.UNBOUNDED && max < min)
      throw JsonSchemaConverter.fail("maxLength is below minLength (at " + hint + ")");
    Expr content = null;
    if (s.has("pattern")) {
      JsonNode p = s.get("pattern");
      if (!p.isTextual())
        throw JsonSchemaConverter.fail("pattern must be a string (at " + hint + ")");
      String regex = p.asText();
      // JSON Schema patterns search; a full match of the pattern is one of its matches
      try {
        content = JsonText.escaped(RegexParser.parse(regex));
      } catch (GrammarException e) {
        throw JsonSchemaConverter.fail("invalid pattern at " + hint + ": " + e.getMessage());
      }
    } else if (s.has("format")) {
      JsonNode f = s.get("format");
      Expr fmt = f.isTextual() ? JsonFormats.of(f.asText()) : null;
      if (fmt == null)
        throw JsonSchemaConverter.fail(
            "the string format "
                + f
                + " is not supported (at "
                + hint
                + "); supported: "
                + new java.util.TreeSet<>(JsonFormats.known()));
      content = JsonText.escaped(fmt);
    }
    if (content != null) {
      if (lengths)
        throw JsonSchemaConverter.fail(
            "minLength/maxLength together with pattern or format is not supported (at "
                + hint
                + ")");
      return Expr.seq(Expr.literal("\""), content, Expr.literal("\""));
    }
    if (!lengths) return c.plainString();
    return Expr.seq(Expr.literal("\""), Expr.repeat(JsonText.CHAR, min, max), Expr.literal("\""));
  }

  static Expr integer(JsonNode s, String hint) {
    BigDecimal lo = bound(s, "minimum", hint);
    BigDecimal hi = bound(s, "maximum", hint);
    BigDecimal xlo = exclusive(s, "exclusiveMinimum", "minimum", hint);
    BigDecimal xhi = exclusive(s, "exclusiveMaximum", "maximum", hint);
    if (lo == null && hi == null && xlo == null && xhi == null) return INTEGER;
    BigInteger ilo = null;
    BigInteger ihi = null;
    if (lo != null) ilo = lo.setScale(0, RoundingMode.CEILING).toBigIntegerExact();
    if (xlo != null) {
      BigInteger v = xlo.setScale(0, RoundingMode.FLOOR).toBigIntegerExact().add(BigInteger.ONE);
      ilo = ilo == null || v.compareTo(ilo) > 0 ? v : ilo;
    }
    if (hi != null) ihi = hi.setScale(0, RoundingMode.FLOOR).toBigIntegerExact();
    if (xhi != null) {
      BigInteger v =
          xhi.setScale(0, RoundingMode.CEILING).toBigIntegerExact().subtract(BigInteger.ONE);
      ihi = ihi == null || v.compareTo(ihi) < 0 ? v : ihi;
    }
    if (ilo != null && ihi != null && ilo.compareTo(ihi) > 0)
      throw JsonSchemaConverter.fail("no integer satisfies the bounds (at " + hint + ")");
    return NumberRanges.integers(ilo, ihi);
  }

  static Expr number(JsonNode s, String hint) {
    BigDecimal lo = bound(s, "minimum", hint);
    BigDecimal hi = bound(s, "maximum", hint);
    BigDecimal xlo = exclusive(s, "exclusiveMinimum", "minimum", hint);
    BigDecimal xhi = exclusive(s, "exclusiveMaximum", "maximum", hint);
    if (lo == null && hi == null && xlo == null && xhi == null) return NUMBER;
    // the tighter of inclusive and exclusive bounds
    boolean loInc = true;
    if (xlo != null && (lo == null || xlo.compareTo(lo) >= 0)) {
      lo = xlo;
      loInc = false;
    }
    boolean hiInc = true;
    if (xhi != null && (hi == null || xhi.compareTo(hi) <= 0)) {
      hi = xhi;
      hiInc = false;
    }
    try {
      return NumberRanges.decimals(lo, loInc, hi, hiInc);
    } catch (IllegalArgumentException e) {
      throw JsonSchemaConverter.fail("no number satisfies the bounds (at " + hint + ")");
    }
  }

  private static BigDecimal bound(JsonNode s, String key, String hint) {
    JsonNode v = s.get(key);
    if (v == null) return null;
    if (!v.isNumber()) throw JsonSchemaConverter.fail(key + " must be a number (at " + hint + ")");
    BigDecimal d = v.decimalValue();
    if (d.abs().compareTo(new BigDecimal("1e30")) > 0 || d.scale() > 30)
      throw JsonSchemaConverter.fail(key + " is out of the supported range (at " + hint + ")");
    return d;
  }

  /** exclusiveMinimum/Maximum as a number (draft 6+), or the draft-4 boolean form. */
  private static BigDecimal exclusive(JsonNode s, String key, String base, String hint) {
    JsonNode v = s.get(key);
    if (v == null) return null;
    if (v.isBoolean()) {
      // draft 4: the inclusive keyword becomes exclusive
      return v.booleanValue() ? bound(s, base, hint) : null;
    }
    return bound(s, key, hint);
  }
}
