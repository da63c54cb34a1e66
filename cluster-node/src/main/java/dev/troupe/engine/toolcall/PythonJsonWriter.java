package dev.troupe.engine.toolcall;

import java.math.BigDecimal;

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
    escape(key, out);
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
    escape(chars, out);
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
    return floatRepr(d);
  }

  /** Python's {@code repr(float)}. */
  static String floatRepr(double d) {
    if (d == 0) return (1 / d < 0) ? "-0.0" : "0.0";
    BigDecimal bd = new BigDecimal(Double.toString(d)).stripTrailingZeros();
    String digits = bd.unscaledValue().abs().toString();
    int exponent = digits.length() - 1 - bd.scale();
    String sign = d < 0 ? "-" : "";
    if (exponent < -4 || exponent >= 16) {
      String mantissa =
          digits.length() == 1 ? digits : digits.charAt(0) + "." + digits.substring(1);
      return sign
          + mantissa
          + "e"
          + (exponent < 0 ? "-" : "+")
          + String.format("%02d", Math.abs(exponent));
    }
    if (exponent < 0) return sign + "0." + "0".repeat(-exponent - 1) + digits;
    if (digits.length() <= exponent + 1)
      return sign + digits + "0".repeat(exponent + 1 - digits.length()) + ".0";
    return sign + digits.substring(0, exponent + 1) + "." + digits.substring(exponent + 1);
  }

  /** The escapes of Python's {@code json} with {@code ensure_ascii=False}. */
  static void escape(String s, StringBuilder sb) {
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> sb.append("\\\"");
        case '\\' -> sb.append("\\\\");
        case '\n' -> sb.append("\\n");
        case '\r' -> sb.append("\\r");
        case '\t' -> sb.append("\\t");
        case '\b' -> sb.append("\\b");
        case '\f' -> sb.append("\\f");
        default -> {
          if (c < 0x20) sb.append(String.format("\\u%04x", (int) c));
          else sb.append(c);
        }
      }
    }
  }
}
