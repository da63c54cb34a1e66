package dev.troupe.engine.structured.syntax;

import dev.troupe.engine.structured.grammar.CodePointSet;
import dev.troupe.engine.structured.grammar.Expr;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * JSON lexical pieces as grammar expressions: string contents (plain characters and escapes), the
 * conversion of a character-level language (a {@code pattern} or a {@code format}) into the escaped
 * spelling it has inside a JSON string, and literal JSON strings.
 */
final class JsonText {

  private JsonText() {}

  /** Characters that may appear unescaped inside a JSON string. */
  static final int[] PLAIN =
      CodePointSet.subtract(CodePointSet.ALL, CodePointSet.of(0, 0x1F, '"', '"', '\\', '\\'));

  static final Expr HEX = Expr.chars('0', '9', 'A', 'F', 'a', 'f');

  /** One escape sequence; "&#92;u" escapes exclude surrogates so each stands for one character. */
  static final Expr ESCAPE =
      Expr.seq(
          Expr.literal("\\"),
          Expr.alt(
              Expr.chars(
                  '"', '"', '\\', '\\', '/', '/', 'b', 'b', 'f', 'f', 'n', 'n', 'r', 'r', 't', 't'),
              Expr.seq(
                  Expr.literal("u"),
                  Expr.alt(
                      Expr.seq(
                          Expr.chars('0', '9', 'A', 'C', 'E', 'F', 'a', 'c', 'e', 'f'),
                          Expr.repeat(HEX, 3, 3)),
                      Expr.seq(
                          Expr.chars('D', 'D', 'd', 'd'),
                          Expr.chars('0', '7'),
                          Expr.repeat(HEX, 2, 2))))));

  /** One character of string content: plain or escaped. */
  static final Expr CHAR = Expr.alt(new Expr.CharSet(PLAIN), ESCAPE);

  /** A JSON string literal spelling {@code s} (minimal escaping). */
  static Expr quoted(String s) {
    return Expr.literal(quote(s));
  }

  /** {@code s} as a JSON string literal, escaping only what JSON requires. */
  static String quote(String s) {
    StringBuilder sb = new StringBuilder("\"");
    s.codePoints().forEach(cp -> sb.append(escapeOne(cp)));
    return sb.append('"').toString();
  }

  private static String escapeOne(int cp) {
    switch (cp) {
      case '"':
        return "\\\"";
      case '\\':
        return "\\\\";
      case '\n':
        return "\\n";
      case '\r':
        return "\\r";
      case '\t':
        return "\\t";
      case '\b':
        return "\\b";
      case '\f':
        return "\\f";
      default:
        if (cp < 0x20) return String.format("\\u%04x", cp);
        return new String(Character.toChars(cp));
    }
  }

  /**
   * The JSON string-content spelling of a character-level language: each character becomes itself
   * when it may appear unescaped, else its escape.
   */
  static Expr escaped(Expr e) {
    if (e instanceof Expr.CharSet c) return escapedSet(c.ranges());
    if (e instanceof Expr.Bytes b) {
      List<Expr> items = new ArrayList<>();
      new String(b.bytes(), StandardCharsets.UTF_8)
          .codePoints()
          .forEach(cp -> items.add(Expr.literal(escapeOne(cp))));
      return Expr.seq(items);
    }
    if (e instanceof Expr.Seq s)
      return Expr.seq(s.items().stream().map(JsonText::escaped).toList());
    if (e instanceof Expr.Alt a)
      return new Expr.Alt(a.options().stream().map(JsonText::escaped).toList());
    if (e instanceof Expr.Repeat r) return new Expr.Repeat(escaped(r.body()), r.min(), r.max());
    return e; // Empty; patterns hold no rule references
  }

  private static Expr escapedSet(int[] set) {
    List<Expr> options = new ArrayList<>();
    int[] plain = CodePointSet.intersect(set, PLAIN);
    if (plain.length > 0) options.add(new Expr.CharSet(plain));
    int[] special = CodePointSet.subtract(set, PLAIN);
    for (int i = 0; i < special.length; i += 2)
      for (int cp = special[i]; cp <= special[i + 1]; cp++)
        options.add(Expr.literal(escapeOne(cp)));
    return options.size() == 1 ? options.get(0) : new Expr.Alt(options);
  }
}
