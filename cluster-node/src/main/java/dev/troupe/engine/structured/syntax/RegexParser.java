package dev.troupe.engine.structured.syntax;

import dev.troupe.engine.structured.grammar.CodePointSet;
import dev.troupe.engine.structured.grammar.Expr;
import dev.troupe.engine.structured.grammar.GrammarException;
import java.util.ArrayList;
import java.util.List;

/**
 * Python {@code re} syntax (the subset xgrammar's regex converter accepts) to a grammar expression
 * over code points, matched against the <em>whole</em> output ({@code fullmatch}): literals and
 * escapes ({@code \n \t \r \f \v \0 \xhh &#92;uhhhh \Uhhhhhhhh}, escaped punctuation), classes
 * {@code [...]} with ranges and negation, {@code \d \w \s} and their negations (ASCII meaning, as
 * xgrammar), {@code .} (anything but a newline), groups {@code (...)}, {@code (?:...)}, {@code
 * (?P<name>...)}, alternation, and the quantifiers {@code * + ? {n} {n,} {,m} {n,m}} with their
 * lazy forms (same language). {@code ^} at the start and {@code $} at the end are accepted and mean
 * nothing more. Refused (with a message): backreferences, lookaround, inline flags, word
 * boundaries, possessive quantifiers, anchors elsewhere.
 *
 * <p>The result is compiled to an automaton, never run by a backtracking matcher, so shapes like
 * {@code (a+)+$} cost nothing special; a regex whose DFA is exponential hits the state bound.
 */
public final class RegexParser {

  static final int MAX_NESTING = 500;
  static final int[] DIGIT = {'0', '9'};
  static final int[] WORD = CodePointSet.of('0', '9', 'A', 'Z', '_', '_', 'a', 'z');
  static final int[] SPACE = CodePointSet.of('\t', '\r', ' ', ' ');
  static final int[] NOT_NEWLINE = CodePointSet.complement(new int[] {'\n', '\n'});

  private final String src;
  private final boolean dotAll;
  private int pos;
  private int depth;

  private RegexParser(String src, boolean dotAll) {
    this.src = src;
    this.dotAll = dotAll;
  }

  /** Parses a whole pattern. */
  public static Expr parse(String pattern) {
    return parse(pattern, false);
  }

  /** Parses a whole pattern; with {@code dotAll} (Python's re.S) '.' also matches a newline. */
  public static Expr parse(String pattern, boolean dotAll) {
    RegexParser p = new RegexParser(pattern, dotAll);
    if (p.peek('^')) p.pos++;
    else if (pattern.startsWith("\\A")) p.pos += 2;
    Expr e = p.alternation();
    if (p.pos < pattern.length()) throw p.error("unbalanced parenthesis");
    return e;
  }

  private Expr alternation() {
    List<Expr> options = new ArrayList<>();
    options.add(sequence());
    while (peek('|')) {
      pos++;
      options.add(sequence());
    }
    return Expr.alt(options);
  }

  private Expr sequence() {
    List<Expr> items = new ArrayList<>();
    while (pos < src.length() && !peek('|') && !peek(')')) {
      if (peek('$') || src.startsWith("\\Z", pos) || src.startsWith("\\z", pos)) {
        int len = peek('$') ? 1 : 2;
        if (atEnd(pos + len)) {
          pos += len;
          continue;
        }
        throw error("anchors are only supported at the start and the end of the pattern");
      }
      if (peek('^'))
        throw error("anchors are only supported at the start and the end of the pattern");
      items.add(quantified(atom()));
    }
    return Expr.seq(items);
  }

  /** Whether only closing parentheses follow position {@code i} (so '$' there ends the match). */
  private boolean atEnd(int i) {
    while (i < src.length() && src.charAt(i) == ')') i++;
    return i == src.length();
  }

  private Expr quantified(Expr atom) {
    while (pos < src.length()) {
      char c = src.charAt(pos);
      int min;
      int max;
      if (c == '*') {
        min = 0;
        max = Expr.Repeat.UNBOUNDED;
        pos++;
      } else if (c == '+') {
        min = 1;
        max = Expr.Repeat.UNBOUNDED;
        pos++;
      } else if (c == '?') {
        min = 0;
        max = 1;
        pos++;
      } else if (c == '{' && isCountedRepeat()) {
        int[] mm = countedRepeat();
        min = mm[0];
        max = mm[1];
      } else {
        return atom;
      }
      if (peek('?')) pos++; // lazy: same language
      else if (peek('+')) throw error("possessive quantifiers are not supported");
      atom = Expr.repeat(atom, min, max);
    }
    return atom;
  }

  private boolean isCountedRepeat() {
    int i = pos + 1;
    int digits = 0;
    while (i < src.length() && Character.isDigit(src.charAt(i))) {
      i++;
      digits++;
    }
    if (i < src.length() && src.charAt(i) == '}') return digits > 0;
    if (i >= src.length() || src.charAt(i) != ',') return false;
    i++;
    while (i < src.length() && Character.isDigit(src.charAt(i))) i++;
    return i < src.length() && src.charAt(i) == '}';
  }

  private int[] countedRepeat() {
    pos++; // {
    int min = 0;
    int max;
    int start = pos;
    while (Character.isDigit(src.charAt(pos))) pos++;
    if (pos > start) min = number(start, pos);
    if (src.charAt(pos) == '}') {
      max = min;
    } else {
      pos++; // ,
      int s2 = pos;
      while (Character.isDigit(src.charAt(pos))) pos++;
      max = pos > s2 ? number(s2, pos) : Expr.Repeat.UNBOUNDED;
    }
    pos++; // }
    if (max != Expr.Repeat.UNBOUNDED && max < min)
      throw error("min repeat greater than max repeat");
    return new int[] {min, max};
  }

  private int number(int from, int to) {
    try {
      int n = Integer.parseInt(src.substring(from, to));
      if (n > 100_000) throw error("repetition count " + n + " is too large");
      return n;
    } catch (NumberFormatException e) {
      throw error("repetition count is too large");
    }
  }

  private Expr atom() {
    char c = src.charAt(pos);
    switch (c) {
      case '(':
        return group();
      case '[':
        return new Expr.CharSet(charClass());
      case '.':
        pos++;
        return new Expr.CharSet(dotAll ? CodePointSet.ALL : NOT_NEWLINE);
      case '\\':
        return escape();
      case '*':
      case '+':
      case '?':
        throw error("nothing to repeat");
      case '{':
        if (isCountedRepeat()) throw error("nothing to repeat");
        pos++;
        return Expr.literal("{");
      default:
        int cp = src.codePointAt(pos);
        pos += Character.charCount(cp);
        return new Expr.CharSet(new int[] {cp, cp});
    }
  }

  private Expr group() {
    pos++; // (
    if (++depth > MAX_NESTING) throw error("groups are nested too deeply");
    if (peek('?')) {
      if (src.startsWith("?:", pos)) {
        pos += 2;
      } else if (src.startsWith("?P<", pos)) {
        int close = src.indexOf('>', pos);
        if (close < 0) throw error("missing >, unterminated name");
        pos = close + 1;
      } else if (src.startsWith("?=", pos)
          || src.startsWith("?!", pos)
          || src.startsWith("?<", pos)) {
        throw error("lookaround assertions are not supported");
      } else if (src.startsWith("?P=", pos)) {
        throw error("backreferences are not supported");
      } else if (src.startsWith("?#", pos)) {
        int close = src.indexOf(')', pos);
        if (close < 0) throw error("missing ), unterminated comment");
        pos = close + 1;
        depth--;
        return Expr.empty();
      } else {
        throw error("inline flags and other group extensions are not supported");
      }
    }
    Expr e = alternation();
    if (!peek(')')) throw error("missing ), unterminated subpattern");
    pos++;
    depth--;
    return e;
  }

  private Expr escape() {
    if (pos + 1 >= src.length()) throw error("bad escape (end of pattern)");
    char c = src.charAt(pos + 1);
    switch (c) {
      case 'd':
        pos += 2;
        return new Expr.CharSet(DIGIT);
      case 'D':
        pos += 2;
        return new Expr.CharSet(CodePointSet.complement(DIGIT));
      case 'w':
        pos += 2;
        return new Expr.CharSet(WORD);
      case 'W':
        pos += 2;
        return new Expr.CharSet(CodePointSet.complement(WORD));
      case 's':
        pos += 2;
        return new Expr.CharSet(SPACE);
      case 'S':
        pos += 2;
        return new Expr.CharSet(CodePointSet.complement(SPACE));
      case 'b':
      case 'B':
        throw error("word boundaries are not supported");
      default:
        if (c >= '1' && c <= '9') throw error("backreferences are not supported");
        int cp = escapedCodePoint();
        return new Expr.CharSet(new int[] {cp, cp});
    }
  }

  /** An escape standing for one code point ({@code pos} at the backslash). */
  private int escapedCodePoint() {
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
      case 'a':
        return 0x07;
      case '0':
        return 0;
      case 'x':
        return hex(2);
      case 'u':
        return hex(4);
      case 'U':
        return hex(8);
      default:
        if (Character.isLetterOrDigit(c)) throw error("bad escape \\" + c);
        pos -= 1;
        int cp = src.codePointAt(pos);
        pos += Character.charCount(cp);
        return cp;
    }
  }

  private int hex(int digits) {
    if (pos + digits > src.length()) throw error("incomplete escape");
    try {
      int cp = Integer.parseInt(src.substring(pos, pos + digits), 16);
      if (cp > CodePointSet.MAX_CODE_POINT || (cp >= 0xD800 && cp <= 0xDFFF))
        throw error("bad escape: code point out of range");
      pos += digits;
      return cp;
    } catch (NumberFormatException e) {
      throw error("incomplete escape");
    }
  }

  /** A bracketed class; {@code pos} at '['. */
  private int[] charClass() {
    pos++;
    boolean negate = false;
    if (peek('^')) {
      negate = true;
      pos++;
    }
    List<Integer> ranges = new ArrayList<>();
    boolean first = true;
    while (true) {
      if (pos >= src.length()) throw error("unterminated character set");
      char c = src.charAt(pos);
      if (c == ']' && !first) {
        pos++;
        break;
      }
      first = false;
      int lo;
      if (c == '\\') {
        char e = pos + 1 < src.length() ? src.charAt(pos + 1) : 0;
        int[] named = namedClass(e);
        if (named != null) {
          pos += 2;
          for (int v : named) ranges.add(v);
          continue;
        }
        if (e == 'b') {
          pos += 2;
          lo = 0x08;
        } else {
          lo = escapedCodePoint();
        }
      } else if (c == '[' && src.startsWith("[:", pos)) {
        throw error("POSIX classes are not supported");
      } else {
        lo = src.codePointAt(pos);
        pos += Character.charCount(lo);
      }
      int hi = lo;
      if (peek('-') && pos + 1 < src.length() && src.charAt(pos + 1) != ']') {
        pos++;
        if (src.charAt(pos) == '\\') {
          if (namedClass(src.charAt(pos + 1)) != null) throw error("bad character range");
          hi = escapedCodePoint();
        } else {
          hi = src.codePointAt(pos);
          pos += Character.charCount(hi);
        }
        if (hi < lo) throw error("bad character range");
      }
      ranges.add(lo);
      ranges.add(hi);
    }
    int[] set = CodePointSet.of(ranges.stream().mapToInt(Integer::intValue).toArray());
    set = CodePointSet.subtract(set, new int[] {0xD800, 0xDFFF});
    return negate ? CodePointSet.complement(set) : set;
  }

  private static int[] namedClass(char c) {
    return switch (c) {
      case 'd' -> DIGIT;
      case 'D' -> CodePointSet.complement(DIGIT);
      case 'w' -> WORD;
      case 'W' -> CodePointSet.complement(WORD);
      case 's' -> SPACE;
      case 'S' -> CodePointSet.complement(SPACE);
      default -> null;
    };
  }

  private boolean peek(char c) {
    return pos < src.length() && src.charAt(pos) == c;
  }

  private GrammarException error(String message) {
    return new GrammarException(message + " at position " + pos);
  }
}
