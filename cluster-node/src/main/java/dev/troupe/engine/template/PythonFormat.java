package dev.troupe.engine.template;

import java.math.BigDecimal;

/**
 * How Python prints numbers and JSON strings, shared by the template engine ({@code repr}, {@code
 * tojson}) and the tool-call parsers (arguments re-dumped as vLLM's {@code json.dumps} does).
 */
public final class PythonFormat {
  private PythonFormat() {}

  /** Python's {@code repr(float)}: shortest round-trip digits, exponent outside [1e-4, 1e16). */
  public static String floatRepr(double d) {
    if (Double.isNaN(d)) return "nan";
    if (Double.isInfinite(d)) return d > 0 ? "inf" : "-inf";
    if (d == 0) return (1 / d < 0) ? "-0.0" : "0.0";
    BigDecimal bd = new BigDecimal(Double.toString(d)).stripTrailingZeros();
    String digits = bd.unscaledValue().abs().toString();
    int exponent = digits.length() - 1 - bd.scale(); // d = 0.digits * 10^(exponent+1)
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

  /**
   * The inside of a string as Python's {@code json.dumps} writes it (no quotes): its escapes, and
   * with {@code ensureAscii} every character past {@code ~} as {@code \\uXXXX}.
   */
  public static void jsonEscape(CharSequence s, StringBuilder sb, boolean ensureAscii) {
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
          if (c < 0x20 || (ensureAscii && c > 0x7e)) sb.append(String.format("\\u%04x", (int) c));
          else sb.append(c);
        }
      }
    }
  }
}
