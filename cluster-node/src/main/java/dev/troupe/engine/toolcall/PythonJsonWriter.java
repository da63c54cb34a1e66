package dev.troupe.engine.toolcall;

import dev.troupe.engine.template.PythonFormat;

/**
 * Writes the events of {@link JsonEvents} as Python's {@code json.dumps(value, ensure_ascii=False)}
 * would print the parsed value: separators {@code ", "} and {@code ": "}, only the escapes Python
 * makes, integers as written ({@code -0} as {@code 0}), other numbers as Python's float repr. vLLM
 * fills {@code function.arguments} this way, so streamed argument pieces concatenate to exactly the
 * non-streamed string. The text grows as events arrive; {@link #drain} takes what is new.
 */
final class PythonJsonWriter implements JsonEvents.Listener {

  private final StringBuilder out = new StringBuilder();
  private final StringBuilder first = new StringBuilder(); // per depth: 'y' = no item yet
  private int drained;
  private boolean afterKey;

  /** The text written since the last drain. */
  String drain() {
    String s = out.substring(drained);
    drained = out.length();
    return s;
  }

  /** Everything written. */
  String text() {
    return out.toString();
  }

  private void beforeValue() {
    if (afterKey) {
      afterKey = false;
      return;
    }
    int d = first.length() - 1;
    if (d < 0) return;
    if (first.charAt(d) == 'y') first.setCharAt(d, 'n');
    else out.append(", ");
  }

  @Override
  public void startObject() {
    beforeValue();
    out.append('{');
    first.append('y');
  }

  @Override
  public void endObject() {
    out.append('}');
    first.setLength(first.length() - 1);
  }

  @Override
  public void startArray() {
    beforeValue();
    out.append('[');
    first.append('y');
  }

  @Override
  public void endArray() {
    out.append(']');
    first.setLength(first.length() - 1);
  }

  @Override
  public void key(String key) {
    beforeValue();
    out.append('"');
    PythonFormat.jsonEscape(key, out, false);
    out.append("\": ");
    afterKey = true;
  }

  @Override
  public void stringStart() {
    beforeValue();
    out.append('"');
  }

  @Override
  public void stringChars(String chars) {
    PythonFormat.jsonEscape(chars, out, false);
  }

  @Override
  public void stringEnd() {
    out.append('"');
  }

  @Override
  public void number(String text) {
    beforeValue();
    out.append(pythonNumber(text));
  }

  @Override
  public void literal(String text) {
    beforeValue();
    out.append(text);
  }

  /** Python's {@code json.dumps(json.loads(text))} of a JSON number. */
  static String pythonNumber(String text) {
    boolean isFloat = text.indexOf('.') >= 0 || text.indexOf('e') >= 0 || text.indexOf('E') >= 0;
    if (!isFloat) return text.equals("-0") ? "0" : text;
    double d = Double.parseDouble(text);
    if (Double.isInfinite(d)) return d > 0 ? "Infinity" : "-Infinity";
    return PythonFormat.floatRepr(d);
  }
}
