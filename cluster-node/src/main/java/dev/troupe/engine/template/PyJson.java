package dev.troupe.engine.template;

import dev.troupe.engine.ChatTemplate.TemplateException;
import dev.troupe.engine.template.Values.Tuple;
import dev.troupe.engine.template.Values.Undefined;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Python's {@code json.dumps} as transformers' {@code tojson} filter calls it: {@code
 * ensure_ascii=False} by default, separators {@code (', ', ': ')} or, with {@code indent}, {@code
 * (',', ': ')}, floats as Python's repr, keys in insertion order unless {@code sort_keys}. The text
 * is refused as soon as it outgrows the longest string a template may build (an indent repeated at
 * every level of a nested value grows fast), and the nesting counts on the render's budget.
 */
final class PyJson {
  private final Budget budget;
  private final boolean ensureAscii;
  private final String indent;
  private final String itemSeparator;
  private final String keySeparator;
  private final boolean sortKeys;

  PyJson(
      Budget budget,
      boolean ensureAscii,
      String indent,
      String itemSeparator,
      String keySeparator,
      boolean sortKeys) {
    this.budget = budget;
    this.ensureAscii = ensureAscii;
    this.indent = indent;
    this.itemSeparator = itemSeparator != null ? itemSeparator : indent != null ? "," : ", ";
    this.keySeparator = keySeparator != null ? keySeparator : ": ";
    this.sortKeys = sortKeys;
  }

  String dumps(Object v) {
    StringBuilder sb = new StringBuilder();
    write(sb, v, 0);
    budget.chars(sb.length());
    return sb.toString();
  }

  private void write(StringBuilder sb, Object v, int level) {
    budget.enter();
    try {
      writeValue(sb, v, level);
    } finally {
      budget.exit();
    }
    if (sb.length() > budget.limits.maxValueLength()) budget.chars(sb.length());
  }

  private void writeValue(StringBuilder sb, Object v, int level) {
    if (v == null) sb.append("null");
    else if (v instanceof Boolean b) sb.append(b ? "true" : "false");
    else if (v instanceof Long || v instanceof java.math.BigInteger) sb.append(v);
    else if (v instanceof Double d) {
      if (Double.isNaN(d)) sb.append("NaN");
      else if (Double.isInfinite(d)) sb.append(d > 0 ? "Infinity" : "-Infinity");
      else sb.append(PythonFormat.floatRepr(d));
    } else if (v instanceof String s) writeString(sb, s);
    else if (v instanceof List<?> || v instanceof Tuple) {
      List<Object> items = Values.asList(v);
      if (items.isEmpty()) {
        sb.append("[]");
        return;
      }
      sb.append('[');
      for (int i = 0; i < items.size(); i++) {
        if (i > 0) sb.append(itemSeparator);
        newline(sb, level + 1);
        write(sb, items.get(i), level + 1);
      }
      newline(sb, level);
      sb.append(']');
    } else if (v instanceof Map<?, ?> m) {
      if (m.isEmpty()) {
        sb.append("{}");
        return;
      }
      budget.items(m.size());
      List<Map.Entry<String, Object>> entries = new ArrayList<>();
      for (Map.Entry<?, ?> e : m.entrySet())
        entries.add(Map.entry(key(e.getKey()), nullSafe(e.getValue())));
      if (sortKeys)
        entries.sort(
            (x, y) -> {
              budget.work(Math.min(x.getKey().length(), y.getKey().length()));
              return x.getKey().compareTo(y.getKey());
            });
      sb.append('{');
      boolean first = true;
      for (Map.Entry<String, Object> e : entries) {
        if (!first) sb.append(itemSeparator);
        first = false;
        newline(sb, level + 1);
        writeString(sb, e.getKey());
        sb.append(keySeparator);
        write(sb, e.getValue() == NULL ? null : e.getValue(), level + 1);
      }
      newline(sb, level);
      sb.append('}');
    } else if (v instanceof Undefined u) {
      throw new TemplateException(
          "Object of type Undefined is not JSON serializable ('" + u.name() + "')");
    } else {
      throw new TemplateException(
          "Object of type " + Values.typeName(v) + " is not JSON serializable");
    }
  }

  private static final Object NULL = new Object();

  private static Object nullSafe(Object v) {
    return v == null ? NULL : v;
  }

  /** Python json converts str, int, float, bool and None keys; others are an error. */
  private static String key(Object k) {
    if (k instanceof String s) return s;
    if (k == null) return "null";
    if (k instanceof Boolean b) return b ? "true" : "false";
    if (k instanceof Long || k instanceof java.math.BigInteger) return k.toString();
    if (k instanceof Double d) return PythonFormat.floatRepr(d);
    throw new TemplateException(
        "keys must be str, int, float, bool or None, not " + Values.typeName(k));
  }

  private void newline(StringBuilder sb, int level) {
    if (indent == null) return;
    long length = sb.length() + 1 + (long) indent.length() * level;
    if (length > budget.limits.maxValueLength()) budget.chars(length);
    sb.append('\n');
    for (int i = 0; i < level; i++) sb.append(indent);
  }

  private void writeString(StringBuilder sb, String s) {
    if ((long) sb.length() + s.length() > budget.limits.maxValueLength())
      budget.chars((long) sb.length() + s.length());
    budget.work(s.length());
    sb.append('"');
    PythonFormat.jsonEscape(s, sb, ensureAscii);
    sb.append('"');
  }
}
