package dev.troupe.engine.template;

import dev.troupe.engine.ChatTemplate.TemplateException;
import dev.troupe.engine.template.Values.Loop;
import dev.troupe.engine.template.Values.Namespace;
import dev.troupe.engine.template.Values.Tuple;
import dev.troupe.engine.template.Values.Undefined;
import java.math.BigInteger;
import java.util.List;
import java.util.Map;

/**
 * Python's {@code repr()} of template values (what {@code {{ [1, 'a'] }}} prints), refused as soon
 * as the text outgrows the longest string a template may build; nested values count on the render's
 * {@link Budget}.
 */
final class Repr {
  private Repr() {}

  /** Python {@code repr(v)}, refused as soon as it outgrows the longest string allowed. */
  static String repr(Object v, Budget budget) {
    StringBuilder sb = new StringBuilder();
    repr(sb, v, budget);
    budget.chars(sb.length());
    return sb.toString();
  }

  private static void repr(StringBuilder sb, Object v, Budget budget) {
    if (v == null) sb.append("None");
    else if (v instanceof Boolean b) sb.append(b ? "True" : "False");
    else if (v instanceof Long || v instanceof BigInteger) sb.append(v);
    else if (v instanceof Double d) sb.append(PythonFormat.floatRepr(d));
    else if (v instanceof String s) {
      budget.work(s.length());
      stringRepr(sb, s);
    } else if (v instanceof Tuple t) {
      sb.append('(');
      joinRepr(sb, t.items(), budget);
      if (t.items().size() == 1) sb.append(',');
      sb.append(')');
    } else if (v instanceof List<?> l) {
      sb.append('[');
      joinRepr(sb, Values.asList(l), budget);
      sb.append(']');
    } else if (v instanceof Map<?, ?> m) {
      sb.append('{');
      budget.enter();
      try {
        boolean first = true;
        for (Map.Entry<?, ?> e : m.entrySet()) {
          if (!first) sb.append(", ");
          first = false;
          repr(sb, e.getKey(), budget);
          sb.append(": ");
          repr(sb, e.getValue(), budget);
          checkLength(sb, budget);
        }
      } finally {
        budget.exit();
      }
      sb.append('}');
    } else if (v instanceof Namespace) sb.append("<Namespace>");
    else if (v instanceof Loop) sb.append("<LoopContext>");
    else if (!(v instanceof Undefined)) sb.append("<function>");
    checkLength(sb, budget);
  }

  private static void joinRepr(StringBuilder sb, List<Object> items, Budget budget) {
    budget.enter();
    try {
      for (int i = 0; i < items.size(); i++) {
        if (i > 0) sb.append(", ");
        repr(sb, items.get(i), budget);
      }
    } finally {
      budget.exit();
    }
  }

  private static void checkLength(StringBuilder sb, Budget budget) {
    if (sb.length() > budget.limits.maxValueLength())
      throw new TemplateException(
          "template string is over the limit of " + budget.limits.maxValueLength() + " characters");
  }

  /** Python's {@code repr(str)}: single quotes unless the text has ' and no ". */
  private static void stringRepr(StringBuilder sb, String s) {
    char quote = s.indexOf('\'') >= 0 && s.indexOf('"') < 0 ? '"' : '\'';
    sb.append(quote);
    s.codePoints()
        .forEach(
            cp -> {
              if (cp == quote || cp == '\\') sb.append('\\').appendCodePoint(cp);
              else if (cp == '\n') sb.append("\\n");
              else if (cp == '\r') sb.append("\\r");
              else if (cp == '\t') sb.append("\\t");
              else if (isPrintable(cp)) sb.appendCodePoint(cp);
              else if (cp < 0x100) sb.append(String.format("\\x%02x", cp));
              else if (cp < 0x10000) sb.append(String.format("\\u%04x", cp));
              else sb.append(String.format("\\U%08x", cp));
            });
    sb.append(quote);
  }

  /** Python's {@code str.isprintable} for one code point. */
  private static boolean isPrintable(int cp) {
    if (cp == ' ') return true;
    return switch (Character.getType(cp)) {
      case Character.CONTROL,
          Character.FORMAT,
          Character.SURROGATE,
          Character.PRIVATE_USE,
          Character.UNASSIGNED,
          Character.LINE_SEPARATOR,
          Character.PARAGRAPH_SEPARATOR,
          Character.SPACE_SEPARATOR ->
          false;
      default -> true;
    };
  }
}
