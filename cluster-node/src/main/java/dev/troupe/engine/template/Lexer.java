package dev.troupe.engine.template;

import dev.troupe.engine.ChatTemplate.TemplateException;
import java.util.ArrayList;
import java.util.List;

/**
 * Splits a template into text and tag tokens with Jinja2's whitespace rules as transformers
 * configures them: {@code trim_blocks} (drop the newline after a block or comment tag), {@code
 * lstrip_blocks} (drop spaces and tabs before a block or comment tag that starts a line), {@code
 * -}/{@code +} modifiers, newlines normalized to {@code \n} and one trailing newline removed
 * ({@code keep_trailing_newline=False}).
 */
final class Lexer {

  enum Type {
    TEXT,
    VAR_BEGIN,
    VAR_END,
    BLOCK_BEGIN,
    BLOCK_END,
    NAME,
    STRING,
    INT,
    FLOAT,
    OP,
    EOF
  }

  record Token(Type type, String value, int line) {
    boolean is(Type t, String v) {
      return type == t && value.equals(v);
    }

    boolean isName(String v) {
      return is(Type.NAME, v);
    }

    boolean isOp(String v) {
      return is(Type.OP, v);
    }
  }

  private static final String[] OPERATORS = {
    "**", "//", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<", ">", "(", ")", "[", "]",
    "{", "}", ",", ".", ":", "|", "="
  };

  private final String src;
  private final List<Token> tokens = new ArrayList<>();
  private int pos;
  private int line = 1;

  private Lexer(String source) {
    String s = source.replace("\r\n", "\n").replace('\r', '\n');
    if (s.endsWith("\n")) s = s.substring(0, s.length() - 1);
    this.src = s;
  }

  static List<Token> tokenize(String source) {
    Lexer lexer = new Lexer(source);
    lexer.run();
    return lexer.tokens;
  }

  private void run() {
    boolean lineStarting = true;
    while (pos < src.length()) {
      int open = nextTagStart(pos);
      String text = src.substring(pos, open < 0 ? src.length() : open);
      if (open < 0) {
        emitText(text);
        break;
      }
      char kind = src.charAt(open + 1);
      char modifier = open + 2 < src.length() ? src.charAt(open + 2) : ' ';
      if (modifier == '-') {
        text = stripTrailingWhitespace(text);
      } else if (kind != '{' && modifier != '+') {
        // lstrip_blocks: only whitespace between the line start and the tag
        int lineStart = text.lastIndexOf('\n') + 1;
        if ((lineStart > 0 || lineStarting) && isBlank(text, lineStart))
          text = text.substring(0, lineStart);
      }
      emitText(text);
      pos = open + 2 + (modifier == '-' || modifier == '+' ? 1 : 0);
      if (kind == '#') {
        int end = src.indexOf("#}", pos);
        if (end < 0) throw error("unclosed comment");
        boolean trimAfter = src.charAt(end - 1) == '-';
        countLines(pos, end + 2);
        pos = end + 2;
        lineStarting = afterTag(trimAfter, true);
      } else {
        boolean block = kind == '%';
        tokens.add(new Token(block ? Type.BLOCK_BEGIN : Type.VAR_BEGIN, "", line));
        boolean trimAfter = lexExpression(block);
        tokens.add(new Token(block ? Type.BLOCK_END : Type.VAR_END, "", line));
        lineStarting = afterTag(trimAfter, block);
      }
    }
    tokens.add(new Token(Type.EOF, "", line));
  }

  /** Consumes whitespace after a tag; returns whether what it consumed ended a line. */
  private boolean afterTag(boolean trimAfter, boolean blockOrComment) {
    if (trimAfter) {
      int start = pos;
      while (pos < src.length() && Character.isWhitespace(src.charAt(pos))) pos++;
      countLines(start, pos);
      return pos > start && src.charAt(pos - 1) == '\n';
    }
    if (blockOrComment && pos < src.length() && src.charAt(pos) == '\n') {
      pos++;
      line++;
      return true;
    }
    return false;
  }

  private int nextTagStart(int from) {
    int i = from;
    while (true) {
      int j = src.indexOf('{', i);
      if (j < 0 || j + 1 >= src.length()) return -1;
      char c = src.charAt(j + 1);
      if (c == '{' || c == '%' || c == '#') return j;
      i = j + 1;
    }
  }

  /** Lexes the inside of a tag up to its end; returns whether the end had a {@code -}. */
  private boolean lexExpression(boolean block) {
    int depth = 0;
    while (true) {
      while (pos < src.length() && Character.isWhitespace(src.charAt(pos))) {
        if (src.charAt(pos) == '\n') line++;
        pos++;
      }
      if (pos >= src.length()) throw error("unclosed tag");
      String end = block ? "%}" : "}}";
      if (src.startsWith("-" + end, pos) && (block || depth == 0)) {
        pos += 3;
        return true;
      }
      if (src.startsWith(end, pos) && (block || depth == 0)) {
        pos += 2;
        return false;
      }
      char c = src.charAt(pos);
      if (c == '"' || c == '\'') {
        tokens.add(new Token(Type.STRING, readString(c), line));
      } else if (Character.isDigit(c)) {
        readNumber();
      } else if (Character.isLetter(c) || c == '_') {
        int start = pos;
        while (pos < src.length()
            && (Character.isLetterOrDigit(src.charAt(pos)) || src.charAt(pos) == '_')) pos++;
        tokens.add(new Token(Type.NAME, src.substring(start, pos), line));
      } else {
        String op = null;
        for (String candidate : OPERATORS) {
          if (src.startsWith(candidate, pos)) {
            op = candidate;
            break;
          }
        }
        if (op == null) throw error("unexpected character '" + c + "'");
        if (op.equals("{") || op.equals("[") || op.equals("(")) depth++;
        if (op.equals("}") || op.equals("]") || op.equals(")")) depth--;
        tokens.add(new Token(Type.OP, op, line));
        pos += op.length();
      }
    }
  }

  private void readNumber() {
    int start = pos;
    while (pos < src.length() && (Character.isDigit(src.charAt(pos)) || src.charAt(pos) == '_'))
      pos++;
    boolean isFloat = false;
    if (pos + 1 < src.length()
        && src.charAt(pos) == '.'
        && Character.isDigit(src.charAt(pos + 1))) {
      isFloat = true;
      pos++;
      while (pos < src.length() && (Character.isDigit(src.charAt(pos)) || src.charAt(pos) == '_'))
        pos++;
    }
    if (pos < src.length() && (src.charAt(pos) == 'e' || src.charAt(pos) == 'E')) {
      int save = pos;
      pos++;
      if (pos < src.length() && (src.charAt(pos) == '+' || src.charAt(pos) == '-')) pos++;
      if (pos < src.length() && Character.isDigit(src.charAt(pos))) {
        isFloat = true;
        while (pos < src.length() && Character.isDigit(src.charAt(pos))) pos++;
      } else {
        pos = save;
      }
    }
    String text = src.substring(start, pos).replace("_", "");
    tokens.add(new Token(isFloat ? Type.FLOAT : Type.INT, text, line));
  }

  /** A Python-style string literal with the usual backslash escapes. */
  private String readString(char quote) {
    StringBuilder sb = new StringBuilder();
    pos++;
    while (true) {
      if (pos >= src.length()) throw error("unterminated string");
      char c = src.charAt(pos++);
      if (c == quote) return sb.toString();
      if (c == '\n') line++;
      if (c != '\\') {
        sb.append(c);
        continue;
      }
      if (pos >= src.length()) throw error("unterminated string");
      char e = src.charAt(pos++);
      switch (e) {
        case 'n' -> sb.append('\n');
        case 't' -> sb.append('\t');
        case 'r' -> sb.append('\r');
        case 'b' -> sb.append('\b');
        case 'f' -> sb.append('\f');
        case 'v' -> sb.append('\u000b');
        case 'a' -> sb.append('\u0007');
        case '0' -> sb.append('\0');
        case '\\', '\'', '"' -> sb.append(e);
        case '\n' -> line++;
        case 'x' -> sb.appendCodePoint(hex(2));
        case 'u' -> sb.appendCodePoint(hex(4));
        case 'U' -> sb.appendCodePoint(hex(8));
        default -> sb.append('\\').append(e);
      }
    }
  }

  private int hex(int digits) {
    if (pos + digits > src.length()) throw error("truncated escape");
    try {
      int cp = Integer.parseInt(src.substring(pos, pos + digits), 16);
      if (cp > Character.MAX_CODE_POINT) throw error("bad escape");
      pos += digits;
      return cp;
    } catch (NumberFormatException e) {
      throw error("bad escape");
    }
  }

  private void emitText(String text) {
    if (!text.isEmpty()) tokens.add(new Token(Type.TEXT, text, line));
    countLines(text);
  }

  private void countLines(String s) {
    for (int i = 0; i < s.length(); i++) if (s.charAt(i) == '\n') line++;
  }

  private void countLines(int from, int to) {
    countLines(src.substring(from, to));
  }

  private static String stripTrailingWhitespace(String s) {
    int end = s.length();
    while (end > 0 && Character.isWhitespace(s.charAt(end - 1))) end--;
    return s.substring(0, end);
  }

  private static boolean isBlank(String s, int from) {
    for (int i = from; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c != ' ' && c != '\t') return false;
    }
    return true;
  }

  private TemplateException error(String message) {
    return new TemplateException("template syntax error at line " + line + ": " + message);
  }
}
