package dev.troupe.engine.structured.syntax;

import dev.troupe.engine.structured.grammar.CodePointSet;
import dev.troupe.engine.structured.grammar.Expr;
import dev.troupe.engine.structured.grammar.Grammar;
import dev.troupe.engine.structured.grammar.GrammarException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The GBNF/EBNF grammar syntax of llama.cpp and xgrammar: {@code name ::= expression} rules (the
 * rule named {@code root} is the start), alternation {@code |}, grouping {@code ( )}, the
 * quantifiers {@code ? * +} and {@code {m}}, {@code {m,}}, {@code {m,n}}, {@code {,n}}, string
 * literals in double (or single) quotes, character classes {@code [a-z]} / {@code [^"\\]}, {@code
 * .} for any character, escapes {@code \n \t \r \\ \" \xhh &#92;uhhhh \Uhhhhhhhh}, and {@code #}
 * comments. A rule may span lines; it ends where the next {@code name ::=} begins. Names are made
 * of letters, digits, {@code _}, {@code -} and {@code .}.
 */
public final class GbnfParser {

  private static final int MAX_NESTING = 500;

  private final String src;
  private int pos;
  private int depth;

  private GbnfParser(String src) {
    this.src = src;
  }

  /** Parses a grammar whose start rule is {@code root}. */
  public static Grammar parse(String text) {
    return new GbnfParser(text).grammar("root");
  }

  private Grammar grammar(String root) {
    Map<String, Expr> rules = new LinkedHashMap<>();
    skipSpace();
    if (pos >= src.length()) throw error("the grammar is empty");
    while (pos < src.length()) {
      String name = name();
      if (name.isEmpty()) throw error("expected a rule name");
      skipSpace();
      if (!src.startsWith("::=", pos)) throw error("expected ::= after rule name '" + name + "'");
      pos += 3;
      Expr body = alternation();
      if (rules.containsKey(name)) throw error("rule '" + name + "' is defined more than once");
      rules.put(name, body);
      skipSpace();
      if (pos < src.length() && peek(')')) throw error("unbalanced )");
    }
    if (!rules.containsKey(root))
      throw new GrammarException("the grammar has no rule named '" + root + "'");
    return new Grammar(rules, root);
  }

  private Expr alternation() {
    List<Expr> options = new ArrayList<>();
    options.add(sequence());
    while (true) {
      skipSpace();
      if (!peek('|')) break;
      pos++;
      options.add(sequence());
    }
    return Expr.alt(options);
  }

  private Expr sequence() {
    List<Expr> items = new ArrayList<>();
    while (true) {
      skipSpace();
      if (pos >= src.length() || peek('|') || peek(')') || atRuleStart()) break;
      items.add(quantified(primary()));
    }
    return Expr.seq(items);
  }

  /** Whether a new rule ({@code name ::=}) starts here. */
  private boolean atRuleStart() {
    int save = pos;
    String name = name();
    skipSpace();
    boolean start = !name.isEmpty() && src.startsWith("::=", pos);
    pos = save;
    return start;
  }

  private Expr quantified(Expr e) {
    while (pos < src.length()) {
      char c = src.charAt(pos);
      if (c == '*') {
        pos++;
        e = Expr.star(e);
      } else if (c == '+') {
        pos++;
        e = Expr.plus(e);
      } else if (c == '?') {
        pos++;
        e = Expr.optional(e);
      } else if (c == '{') {
        pos++;
        skipInline();
        int min = 0;
        int max;
        if (!peek(',')) min = integer();
        skipInline();
        if (peek('}')) {
          max = min;
        } else {
          expect(',');
          skipInline();
          max = peek('}') ? Expr.Repeat.UNBOUNDED : integer();
        }
        skipInline();
        expect('}');
        if (max != Expr.Repeat.UNBOUNDED && max < min)
          throw error("repetition {" + min + "," + max + "} has max below min");
        e = Expr.repeat(e, min, max);
      } else {
        return e;
      }
    }
    return e;
  }

  private Expr primary() {
    char c = src.charAt(pos);
    if (c == '"' || c == '\'') return stringLiteral(c);
    if (c == '[') return new Expr.CharSet(charClass());
    if (c == '.') {
      pos++;
      return new Expr.CharSet(CodePointSet.ALL);
    }
    if (c == '(') {
      pos++;
      if (++depth > MAX_NESTING) throw error("groups are nested too deeply");
      skipSpace();
      if (peek('=')) throw error("lookahead assertions are not supported");
      Expr e = alternation();
      skipSpace();
      expect(')');
      depth--;
      return e;
    }
    String name = name();
    if (name.isEmpty()) throw error("unexpected character '" + c + "'");
    return Expr.ref(name);
  }

  private Expr stringLiteral(char quote) {
    pos++;
    StringBuilder sb = new StringBuilder();
    while (true) {
      if (pos >= src.length() || src.charAt(pos) == '\n')
        throw error("unterminated string literal");
      char c = src.charAt(pos);
      if (c == quote) {
        pos++;
        break;
      }
      sb.appendCodePoint(c == '\\' ? escape() : nextCodePoint());
    }
    return Expr.literal(sb.toString());
  }

  private int[] charClass() {
    pos++; // [
    boolean negate = false;
    if (peek('^')) {
      negate = true;
      pos++;
    }
    List<Integer> ranges = new ArrayList<>();
    while (true) {
      if (pos >= src.length()) throw error("unterminated character class");
      if (peek(']')) {
        pos++;
        break;
      }
      int lo = peek('\\') ? escape() : nextCodePoint();
      int hi = lo;
      if (peek('-') && pos + 1 < src.length() && src.charAt(pos + 1) != ']') {
        pos++;
        hi = peek('\\') ? escape() : nextCodePoint();
        if (hi < lo) throw error("character range is out of order");
      }
      ranges.add(lo);
      ranges.add(hi);
    }
    int[] set = CodePointSet.of(ranges.stream().mapToInt(Integer::intValue).toArray());
    set = CodePointSet.subtract(set, new int[] {0xD800, 0xDFFF});
    return negate ? CodePointSet.complement(set) : set;
  }

  private int escape() {
    if (pos + 1 >= src.length()) throw error("incomplete escape");
    char c = src.charAt(pos + 1);
    pos += 2;
    switch (c) {
      case 'n':
        return '\n';
      case 't':
        return '\t';
      case 'r':
        return '\r';
      case 'f':
        return '\f';
      case 'v':
        return 0x0B;
      case '0':
        return 0;
      case 'x':
        return hex(2);
      case 'u':
        return hex(4);
      case 'U':
        return hex(8);
      default:
        pos -= 1;
        return nextCodePoint(); // \\ \" \' \[ \] \- and any other escaped character
    }
  }

  private int hex(int digits) {
    if (pos + digits > src.length()) throw error("incomplete escape");
    try {
      int cp = Integer.parseInt(src.substring(pos, pos + digits), 16);
      if (cp > CodePointSet.MAX_CODE_POINT || (cp >= 0xD800 && cp <= 0xDFFF))
        throw error("escape out of range");
      pos += digits;
      return cp;
    } catch (NumberFormatException e) {
      throw error("invalid hex escape");
    }
  }

  private int nextCodePoint() {
    int cp = src.codePointAt(pos);
    pos += Character.charCount(cp);
    return cp;
  }

  private int integer() {
    int start = pos;
    while (pos < src.length() && Character.isDigit(src.charAt(pos))) pos++;
    if (pos == start) throw error("expected a number");
    try {
      int n = Integer.parseInt(src.substring(start, pos));
      if (n > 100_000) throw error("repetition count " + n + " is too large");
      return n;
    } catch (NumberFormatException e) {
      throw error("repetition count is too large");
    }
  }

  private String name() {
    int start = pos;
    while (pos < src.length()) {
      char c = src.charAt(pos);
      if (Character.isLetterOrDigit(c) || c == '_' || c == '-' || c == '.') pos++;
      else break;
    }
    return src.substring(start, pos);
  }

  /** Skips whitespace (newlines included) and comments. */
  private void skipSpace() {
    while (pos < src.length()) {
      char c = src.charAt(pos);
      if (c == '#') {
        while (pos < src.length() && src.charAt(pos) != '\n') pos++;
      } else if (Character.isWhitespace(c)) {
        pos++;
      } else {
        return;
      }
    }
  }

  private void skipInline() {
    while (pos < src.length() && (src.charAt(pos) == ' ' || src.charAt(pos) == '\t')) pos++;
  }

  private void expect(char c) {
    if (!peek(c)) throw error("expected '" + c + "'");
    pos++;
  }

  private boolean peek(char c) {
    return pos < src.length() && src.charAt(pos) == c;
  }

  private GrammarException error(String message) {
    int line = 1;
    int col = 1;
    for (int i = 0; i < pos && i < src.length(); i++) {
      if (src.charAt(i) == '\n') {
        line++;
        col = 1;
      } else {
        col++;
      }
    }
    return new GrammarException(message + " at line " + line + ", column " + col);
  }
}
