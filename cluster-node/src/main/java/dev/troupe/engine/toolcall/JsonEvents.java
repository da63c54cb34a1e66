package dev.troupe.engine.toolcall;

/**
 * An incremental reader of one JSON value that reports what it recognizes as soon as the text
 * allows, including the characters of a string while it is still open, so tool-call arguments can
 * be streamed as they are generated. Feed text in any pieces; {@link #done()} once the value is
 * complete ({@link #end()} is the offset, in all text fed so far, just after it), {@link #failed()}
 * on malformed input (then nothing more is reported).
 */
final class JsonEvents {

  /** What the reader reports. */
  interface Listener {
    void startObject();

    void endObject();

    void startArray();

    void endArray();

    /** An object key (complete). */
    void key(String key);

    void stringStart();

    /** Decoded characters of the open string. */
    void stringChars(String chars);

    void stringEnd();

    /** A complete number, as written. */
    void number(String text);

    /** true, false or null. */
    void literal(String text);
  }

  private enum State {
    VALUE, // expecting a value
    AFTER_VALUE, // expecting ',' or a closing bracket (or the end at depth 0)
    KEY_OR_END, // after '{'
    KEY, // after ',' in an object
    COLON,
    STRING,
    ESCAPE,
    UNICODE,
    NUMBER,
    LITERAL,
    VALUE_OR_END, // after '['
    DONE,
    FAILED
  }

  private final Listener listener;
  private State state = State.VALUE;
  private final StringBuilder stack = new StringBuilder(); // '{' or '['
  private boolean stringIsKey;
  private final StringBuilder token = new StringBuilder(); // key text, number, literal, \\u digits
  private final StringBuilder chunk = new StringBuilder(); // decoded string chars not yet reported
  private char pendingHigh; // a high surrogate escape waiting for its pair
  private int offset; // characters consumed so far
  private int end = -1;

  JsonEvents(Listener listener) {
    this.listener = listener;
  }

  boolean done() {
    return state == State.DONE;
  }

  boolean failed() {
    return state == State.FAILED;
  }

  /** Offset just after the value, in the text fed so far; -1 while not done. */
  int end() {
    return end;
  }

  /** Consumes text up to the end of the value (the rest is left unread). */
  void feed(CharSequence text) {
    for (int i = 0; i < text.length(); i++) {
      if (state == State.DONE || state == State.FAILED) return;
      step(text.charAt(i));
      offset++;
      if (state == State.DONE && end < 0) end = offset;
    }
    flushChunk();
  }

  /** The text ended: a number at the very end of a top-level value completes it. */
  void finish() {
    if (state == State.NUMBER && stack.length() == 0) {
      if (!numberValid()) {
        state = State.FAILED;
        return;
      }
      listener.number(token.toString());
      state = State.DONE;
      end = offset;
    }
  }

  private void step(char c) {
    switch (state) {
      case VALUE, VALUE_OR_END -> {
        if (isSpace(c)) return;
        if (state == State.VALUE_OR_END && c == ']') {
          closeContainer('[');
          return;
        }
        startValue(c);
      }
      case AFTER_VALUE -> {
        if (isSpace(c)) return;
        char top = stack.charAt(stack.length() - 1);
        if (c == ',') state = top == '{' ? State.KEY : State.VALUE;
        else if (c == '}' && top == '{') closeContainer('{');
        else if (c == ']' && top == '[') closeContainer('[');
        else fail();
      }
      case KEY_OR_END, KEY -> {
        if (isSpace(c)) return;
        if (c == '}' && state == State.KEY_OR_END) closeContainer('{');
        else if (c == '"') {
          stringIsKey = true;
          token.setLength(0);
          state = State.STRING;
        } else fail();
      }
      case COLON -> {
        if (isSpace(c)) return;
        if (c == ':') state = State.VALUE;
        else fail();
      }
      case STRING -> {
        if (c == '"') {
          endString();
        } else if (c == '\\') {
          state = State.ESCAPE;
        } else if (c < 0x20) {
          fail();
        } else {
          stringChar(c);
        }
      }
      case ESCAPE -> {
        char d =
            switch (c) {
              case '"' -> '"';
              case '\\' -> '\\';
              case '/' -> '/';
              case 'b' -> '\b';
              case 'f' -> '\f';
              case 'n' -> '\n';
              case 'r' -> '\r';
              case 't' -> '\t';
              case 'u' -> 0;
              default -> 1;
            };
        if (c == 'u') {
          token.setLength(stringIsKey ? token.length() : 0);
          unicodeStart = token.length();
          state = State.UNICODE;
        } else if (d == 1) {
          fail();
        } else {
          stringChar(d);
          state = State.STRING;
        }
      }
      case UNICODE -> {
        if (Character.digit(c, 16) < 0) {
          fail();
          return;
        }
        token.append(c);
        if (token.length() - unicodeStart == 4) {
          char u = (char) Integer.parseInt(token.substring(unicodeStart), 16);
          token.setLength(unicodeStart);
          state = State.STRING;
          stringChar(u);
        }
      }
      case NUMBER -> {
        if ((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
          token.append(c);
          return;
        }
        if (!numberValid()) {
          fail();
          return;
        }
        listener.number(token.toString());
        if (stack.length() == 0) {
          end = offset; // this character is not part of the value
          state = State.DONE;
          return;
        }
        state = State.AFTER_VALUE;
        step(c);
      }
      case LITERAL -> {
        token.append(c);
        String t = token.toString();
        for (String lit : new String[] {"true", "false", "null"}) {
          if (lit.equals(t)) {
            listener.literal(lit);
            state = stack.length() == 0 ? State.DONE : State.AFTER_VALUE;
            return;
          }
          if (lit.startsWith(t)) return;
        }
        fail();
      }
      default -> {}
    }
  }

  private int unicodeStart;

  private void startValue(char c) {
    if (c == '{') {
      stack.append('{');
      listener.startObject();
      state = State.KEY_OR_END;
    } else if (c == '[') {
      stack.append('[');
      listener.startArray();
      state = State.VALUE_OR_END;
    } else if (c == '"') {
      stringIsKey = false;
      listener.stringStart();
      state = State.STRING;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      token.setLength(0);
      token.append(c);
      state = State.NUMBER;
    } else if (c == 't' || c == 'f' || c == 'n') {
      token.setLength(0);
      token.append(c);
      state = State.LITERAL;
    } else {
      fail();
    }
  }

  private void closeContainer(char open) {
    stack.setLength(stack.length() - 1);
    if (open == '{') listener.endObject();
    else listener.endArray();
    state = State.AFTER_VALUE;
    if (stack.length() == 0) state = State.DONE;
  }

  private void stringChar(char c) {
    if (pendingHigh != 0) {
      char high = pendingHigh;
      pendingHigh = 0;
      if (Character.isLowSurrogate(c)) {
        append(high);
        append(c);
        return;
      }
      append('\uFFFD');
    }
    if (Character.isHighSurrogate(c)) {
      pendingHigh = c;
      return;
    }
    append(Character.isLowSurrogate(c) ? '\uFFFD' : c);
  }

  private void append(char c) {
    if (stringIsKey) token.append(c);
    else chunk.append(c);
  }

  private void endString() {
    if (pendingHigh != 0) {
      pendingHigh = 0;
      append('\uFFFD');
    }
    if (stringIsKey) {
      listener.key(token.toString());
      token.setLength(0);
      state = State.COLON;
    } else {
      flushChunk();
      listener.stringEnd();
      state = State.AFTER_VALUE;
      if (stack.length() == 0) state = State.DONE;
    }
  }

  private void flushChunk() {
    if (chunk.length() > 0) {
      listener.stringChars(chunk.toString());
      chunk.setLength(0);
    }
  }

  private boolean numberValid() {
    return token.toString().matches("-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+-]?[0-9]+)?");
  }

  private void fail() {
    state = State.FAILED;
  }

  private static boolean isSpace(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
  }
}
