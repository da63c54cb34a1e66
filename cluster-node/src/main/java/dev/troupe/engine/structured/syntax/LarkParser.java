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
 * Lark grammars, the way vLLM takes them (a grammar with no {@code ::=} line is Lark): rules {@code
 * name: …} and terminals {@code NAME: …} (priorities, {@code ?}/{@code !} prefixes and {@code ->
 * alias} are accepted and mean nothing for the language), alternatives across lines, strings {@code
 * "…"} or {@code '…'} (suffix {@code i}: ASCII case-insensitive), ranges {@code "a".."z"}, regexes
 * {@code /…/} (flags {@code i}, {@code s}), {@code [optional]}, {@code ? * +}, {@code ~n} and
 * {@code ~n..m}, groups, {@code //} comments, and {@code %import common.NAME} for Lark's common
 * terminals. The start rule is {@code start}. Refused: {@code %ignore} (implicit whitespace cannot
 * be expressed without rewriting every rule), {@code %declare}, templates.
 */
public final class LarkParser {

  private static final String COMMON =
      """
      DIGIT: "0".."9"
      HEXDIGIT: "a".."f" | "A".."F" | DIGIT
      INT: DIGIT+
      SIGNED_INT: ["+"|"-"] INT
      DECIMAL: INT "." INT? | "." INT
      _EXP: ("e"|"E") SIGNED_INT
      FLOAT: INT _EXP | DECIMAL _EXP?
      SIGNED_FLOAT: ["+"|"-"] FLOAT
      NUMBER: FLOAT | INT
      SIGNED_NUMBER: ["+"|"-"] NUMBER
      ESCAPED_STRING: "\\"" (/[^"\\\\]/ | "\\\\" /./s)* "\\""
      LCASE_LETTER: "a".."z"
      UCASE_LETTER: "A".."Z"
      LETTER: UCASE_LETTER | LCASE_LETTER
      WORD: LETTER+
      CNAME: ("_"|LETTER) ("_"|LETTER|DIGIT)*
      WS_INLINE: (" "|/\\t/)+
      WS: /[ \\t\\f\\r\\n]/+
      CR: /\\r/
      LF: /\\n/
      NEWLINE: (CR? LF)+
      """;

  private final String src;
  private int pos;
  private int depth;
  private final Map<String, Expr> rules = new LinkedHashMap<>();
  private final List<String> imports = new ArrayList<>();

  private LarkParser(String src) {
    this.src = src;
  }

  /** vLLM's test: no line (comments removed) contains {@code ::=}. */
  public static boolean isLikelyLark(String grammar) {
    for (String line : grammar.split("\n")) {
      String l = line.replaceAll("(#|//).*$", "").strip();
      if (!l.isEmpty() && l.contains("::=")) return false;
    }
    return true;
  }

  public static Grammar parse(String text) {
    LarkParser p = new LarkParser(text);
    p.definitions();
    if (!p.rules.containsKey("start"))
      throw new GrammarException("the grammar has no 'start' rule");
    if (!p.imports.isEmpty()) {
      LarkParser common = new LarkParser(COMMON);
      common.definitions();
      List<String> needed = new ArrayList<>(p.imports);
      for (int i = 0; i < needed.size(); i++) {
        String name = needed.get(i);
        Expr body = common.rules.get(name);
        if (body == null) throw new GrammarException("unknown import common." + name);
        p.rules.putIfAbsent(name, body);
        collectRefs(
            body,
            ref -> {
              if (!needed.contains(ref)) needed.add(ref);
            });
      }
    }
    return new Grammar(p.rules, "start");
  }

  private static void collectRefs(Expr e, java.util.function.Consumer<String> sink) {
    if (e instanceof Expr.Ref r) sink.accept(r.rule());
    else if (e instanceof Expr.Seq s) s.items().forEach(x -> collectRefs(x, sink));
    else if (e instanceof Expr.Alt a) a.options().forEach(x -> collectRefs(x, sink));
    else if (e instanceof Expr.Repeat r) collectRefs(r.body(), sink);
  }

  private void definitions() {
    while (true) {
      skipSpace();
      if (pos >= src.length()) return;
      if (peek('%')) {
        directive();
        continue;
      }
      if (peek('?') || peek('!')) pos++;
      String name = name();
      if (name.isEmpty()) throw error("expected a rule or terminal name");
      if (peek('.')) {
        pos++;
        if (peek('-')) pos++;
        while (pos < src.length() && Character.isDigit(src.charAt(pos))) pos++;
      }
      skipSpace();
      if (peek('{')) throw error("templates are not supported");
      if (!peek(':')) throw error("expected ':' after '" + name + "'");
      pos++;
      Expr body = expansions();
      if (rules.containsKey(name)) throw error("'" + name + "' is defined more than once");
      rules.put(name, body);
    }
  }

  private void directive() {
    int lineEnd = src.indexOf('\n', pos);
    if (lineEnd < 0) lineEnd = src.length();
    String line = src.substring(pos, lineEnd).replaceAll("//.*$", "").strip();
    pos = lineEnd;
    String[] parts = line.split("\\s+", 2);
    switch (parts[0]) {
      case "%import":
        {
          String rest = parts.length > 1 ? parts[1].strip() : "";
          if (rest.startsWith("common.")) {
            String name = rest.substring(7).split("\\s*->\\s*")[0].strip();
            String alias =
                rest.contains("->") ? rest.substring(rest.indexOf("->") + 2).strip() : name;
            imports.add(name);
            if (!alias.equals(name)) rules.put(alias, Expr.ref(name));
          } else if (rest.startsWith("common")) {
            String list = rest.substring(6).strip();
            if (!list.startsWith("(") || !list.endsWith(")")) throw error("bad %import: " + line);
            for (String n : list.substring(1, list.length() - 1).split(",")) imports.add(n.strip());
          } else {
            throw error("only imports from 'common' are supported: " + line);
          }
          return;
        }
      case "%ignore":
        throw error("%ignore is not supported");
      default:
        throw error("unsupported directive " + parts[0]);
    }
  }

  private Expr expansions() {
    List<Expr> alts = new ArrayList<>();
    alts.add(alias(sequence()));
    while (true) {
      skipSpace();
      if (!peek('|')) break;
      pos++;
      alts.add(alias(sequence()));
    }
    return Expr.alt(alts);
  }

  private Expr alias(Expr e) {
    skipInline();
    if (src.startsWith("->", pos)) {
      pos += 2;
      skipInline();
      name();
    }
    return e;
  }

  private Expr sequence() {
    List<Expr> items = new ArrayList<>();
    while (true) {
      skipSpace();
      if (pos >= src.length()
          || peek('|')
          || peek(')')
          || peek(']')
          || peek('%')
          || src.startsWith("->", pos)) break;
      if (atDefinition()) break;
      items.add(postfix(atom()));
    }
    return Expr.seq(items);
  }

  private boolean atDefinition() {
    int save = pos;
    if (peek('?') || peek('!')) pos++;
    String name = name();
    if (peek('.')) {
      pos++;
      if (peek('-')) pos++;
      while (pos < src.length() && Character.isDigit(src.charAt(pos))) pos++;
    }
    skipInline();
    boolean def = !name.isEmpty() && peek(':');
    pos = save;
    return def;
  }

  private Expr postfix(Expr e) {
    while (pos < src.length()) {
      char c = src.charAt(pos);
      if (c == '?') {
        pos++;
        e = Expr.optional(e);
      } else if (c == '*') {
        pos++;
        e = Expr.star(e);
      } else if (c == '+') {
        pos++;
        e = Expr.plus(e);
      } else if (c == '~') {
        pos++;
        skipInline();
        int min = integer();
        int max = min;
        if (src.startsWith("..", pos)) {
          pos += 2;
          max = integer();
        }
        if (max < min) throw error("bad repetition range");
        e = Expr.repeat(e, min, max);
      } else {
        return e;
      }
    }
    return e;
  }

  private Expr atom() {
    char c = src.charAt(pos);
    if (c == '(' || c == '[') {
      pos++;
      if (++depth > 500) throw error("groups are nested too deeply");
      Expr inner = expansions();
      skipSpace();
      char close = c == '(' ? ')' : ']';
      if (!peek(close)) throw error("expected '" + close + "'");
      pos++;
      depth--;
      return c == '[' ? Expr.optional(inner) : inner;
    }
    if (c == '"' || c == '\'') {
      String s = string(c);
      boolean ci = peek('i') && !Character.isLetterOrDigit(charAt(pos + 1));
      if (ci) pos++;
      skipInline();
      if (src.startsWith("..", pos)) {
        pos += 2;
        skipInline();
        char q = src.charAt(pos);
        if (q != '"' && q != '\'') throw error("expected a string after '..'");
        String hi = string(q);
        if (s.codePointCount(0, s.length()) != 1 || hi.codePointCount(0, hi.length()) != 1)
          throw error("a range needs single characters");
        return Expr.chars(s.codePointAt(0), hi.codePointAt(0));
      }
      Expr lit = Expr.literal(s);
      return ci ? caseInsensitive(s) : lit;
    }
    if (c == '/') return regex();
    String name = name();
    if (name.isEmpty()) throw error("unexpected character '" + c + "'");
    return Expr.ref(name);
  }

  private Expr caseInsensitive(String s) {
    List<Expr> items = new ArrayList<>();
    s.codePoints()
        .forEach(
            cp -> items.add(new Expr.CharSet(CodePointSet.caseInsensitive(new int[] {cp, cp}))));
    return Expr.seq(items);
  }

  private Expr regex() {
    int start = ++pos;
    while (pos < src.length() && src.charAt(pos) != '/') {
      if (src.charAt(pos) == '\\') pos++;
      if (src.charAt(pos) == '\n') throw error("unterminated regex");
      pos++;
    }
    if (pos >= src.length()) throw error("unterminated regex");
    String pattern = src.substring(start, pos++);
    boolean i = false;
    boolean s = false;
    while (pos < src.length() && Character.isLetter(src.charAt(pos))) {
      char f = src.charAt(pos++);
      if (f == 'i') i = true;
      else if (f == 's') s = true;
      else throw error("unsupported regex flag '" + f + "'");
    }
    Expr e = RegexParser.parse(pattern, s);
    return i ? ignoreCase(e) : e;
  }

  private static Expr ignoreCase(Expr e) {
    if (e instanceof Expr.CharSet c)
      return new Expr.CharSet(CodePointSet.caseInsensitive(c.ranges()));
    if (e instanceof Expr.Seq q)
      return new Expr.Seq(q.items().stream().map(LarkParser::ignoreCase).toList());
    if (e instanceof Expr.Alt a)
      return new Expr.Alt(a.options().stream().map(LarkParser::ignoreCase).toList());
    if (e instanceof Expr.Repeat r) return new Expr.Repeat(ignoreCase(r.body()), r.min(), r.max());
    return e;
  }

  private String string(char quote) {
    pos++;
    StringBuilder sb = new StringBuilder();
    while (true) {
      if (pos >= src.length() || src.charAt(pos) == '\n') throw error("unterminated string");
      char c = src.charAt(pos);
      if (c == quote) {
        pos++;
        return sb.toString();
      }
      if (c == '\\' && pos + 1 < src.length()) {
        char e = src.charAt(pos + 1);
        pos += 2;
        switch (e) {
          case 'n' -> sb.append('\n');
          case 't' -> sb.append('\t');
          case 'r' -> sb.append('\r');
          case 'f' -> sb.append('\f');
          case '0' -> sb.append('\0');
          case 'x' -> sb.appendCodePoint(hex(2));
          case 'u' -> sb.appendCodePoint(hex(4));
          case 'U' -> sb.appendCodePoint(hex(8));
          default -> sb.append(e);
        }
        continue;
      }
      sb.appendCodePoint(src.codePointAt(pos));
      pos += Character.charCount(src.codePointAt(pos));
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
      throw error("invalid escape");
    }
  }

  private int integer() {
    int start = pos;
    while (pos < src.length() && Character.isDigit(src.charAt(pos))) pos++;
    if (start == pos) throw error("expected a number");
    try {
      int n = Integer.parseInt(src.substring(start, pos));
      if (n > 100_000) throw error("repetition count too large");
      return n;
    } catch (NumberFormatException e) {
      throw error("repetition count too large");
    }
  }

  private String name() {
    int start = pos;
    while (pos < src.length()
        && (Character.isLetterOrDigit(src.charAt(pos)) || src.charAt(pos) == '_')) pos++;
    return src.substring(start, pos);
  }

  private char charAt(int i) {
    return i < src.length() ? src.charAt(i) : ' ';
  }

  private void skipSpace() {
    while (pos < src.length()) {
      char c = src.charAt(pos);
      if (src.startsWith("//", pos)) {
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

  private boolean peek(char c) {
    return pos < src.length() && src.charAt(pos) == c;
  }

  private GrammarException error(String message) {
    int line = 1;
    for (int i = 0; i < pos && i < src.length(); i++) if (src.charAt(i) == '\n') line++;
    return new GrammarException(message + " (line " + line + ")");
  }
}
