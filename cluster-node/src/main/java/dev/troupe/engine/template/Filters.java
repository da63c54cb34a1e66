package dev.troupe.engine.template;

import dev.troupe.engine.ChatTemplate.TemplateException;
import dev.troupe.engine.template.Values.Tuple;
import dev.troupe.engine.template.Values.Undefined;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * Jinja2's built-in filters that chat templates use, plus transformers' {@code tojson}. Each filter
 * that builds a string or list asks the render's {@link Budget} for its size before building it.
 */
final class Filters {
  private Filters() {}

  static Object apply(
      Builtins b, String name, Object v, List<Object> args, Map<String, Object> kw) {
    Budget budget = b.budget;
    switch (name) {
      case "default", "d" -> {
        Object fallback = opt(args, kw, 0, "default_value", "");
        boolean bool = Values.truthy(opt(args, kw, 1, "boolean", false));
        return v instanceof Undefined || (bool && !Values.truthy(v)) ? fallback : v;
      }
      case "tojson" -> {
        Object indent = opt(args, kw, 0, "indent", null);
        Object separators = kw.get("separators");
        String itemSep = null;
        String keySep = null;
        if (separators != null) {
          List<Object> seps = Values.asList(separators);
          if (seps == null || seps.size() != 2)
            throw new TemplateException("separators must be a pair");
          itemSep = Values.str(seps.get(0), budget);
          keySep = Values.str(seps.get(1), budget);
        }
        String indentStr =
            indent == null ? null : indent instanceof String s ? s : spaces(indent, budget);
        return new PyJson(
                budget,
                Values.truthy(kw.getOrDefault("ensure_ascii", false)),
                indentStr,
                itemSep,
                keySep,
                Values.truthy(kw.getOrDefault("sort_keys", false)))
            .dumps(v);
      }
      case "safe", "e", "escape", "forceescape" -> {
        if (name.equals("safe")) return v;
        return escapeHtml(Values.str(v, budget), budget);
      }
    }
    if (v instanceof Undefined u
        && !name.equals("length")
        && !name.equals("count")
        && !name.equals("list")
        && !name.equals("string")
        && !name.equals("items")
        && !name.equals("join")) throw u.error();
    return switch (name) {
      case "trim" ->
          StringMethods.strip(
              Values.str(v, budget), optString(args, kw, 0, "chars"), true, true, budget);
      case "length", "count" -> Values.length(v, budget);
      case "list" -> copy(Values.iterate(v, budget), budget);
      case "string" -> Values.str(v, budget);
      case "upper", "lower", "capitalize", "title", "center" ->
          StringMethods.call(
              Values.str(v, budget),
              name,
              name.equals("center") ? List.of(opt(args, kw, 0, "width", 80L)) : List.of(),
              Map.of(),
              budget);
      case "replace" -> {
        if (args.size() < 2)
          throw new TemplateException("replace() needs the old and the new string");
        Object count = opt(args, kw, 2, "count", null);
        yield StringMethods.call(
            Values.str(v, budget),
            "replace",
            count == null
                ? List.of(Values.str(args.get(0), budget), Values.str(args.get(1), budget))
                : List.of(Values.str(args.get(0), budget), Values.str(args.get(1), budget), count),
            Map.of(),
            budget);
      }
      case "join" -> {
        String sep = Values.str(opt(args, kw, 0, "d", ""), budget);
        Object attr = opt(args, kw, 1, "attribute", null);
        List<Object> parts = new ArrayList<>();
        for (Object o : Values.iterate(v, budget))
          parts.add(Values.str(attr == null ? o : b.getItem(o, attr), budget));
        yield StringMethods.join(sep, parts, budget);
      }
      case "first" -> {
        List<Object> items = Values.iterate(v, budget);
        yield items.isEmpty() ? new Undefined("first") : items.get(0);
      }
      case "last" -> {
        List<Object> items = Values.iterate(v, budget);
        yield items.isEmpty() ? new Undefined("last") : items.get(items.size() - 1);
      }
      case "reverse" -> {
        if (v instanceof String s) {
          budget.chars(s.length());
          yield new StringBuilder(s).reverse().toString();
        }
        List<Object> items = copy(Values.iterate(v, budget), budget);
        java.util.Collections.reverse(items);
        yield items;
      }
      case "items" -> {
        if (v instanceof Undefined) yield List.of();
        if (!(v instanceof Map<?, ?> m))
          throw new TemplateException("can only get item pairs from a mapping");
        yield pairs(m, budget);
      }
      case "dictsort" -> {
        if (!(v instanceof Map<?, ?> m)) throw new TemplateException("dictsort needs a mapping");
        List<Object> out = pairs(m, budget);
        out.sort(
            (x, y) ->
                Values.compare(((Tuple) x).items().get(0), ((Tuple) y).items().get(0), budget));
        yield out;
      }
      case "int" -> toInt(v, opt(args, kw, 0, "default", 0L));
      case "float" -> toFloat(v, opt(args, kw, 0, "default", 0.0));
      case "abs" -> v instanceof Double d ? (Object) Math.abs(d) : PyInt.abs(v);
      case "round" ->
          round(v, opt(args, kw, 0, "precision", 0L), opt(args, kw, 1, "method", "common"), budget);
      case "sum" -> {
        Object total = opt(args, kw, 1, "start", 0L);
        Object attr = opt(args, kw, 0, "attribute", null);
        for (Object o : Values.iterate(v, budget))
          total = Operators.binary("+", total, attr == null ? o : b.getItem(o, attr), budget);
        yield total;
      }
      case "min", "max" -> {
        List<Object> items = Values.iterate(v, budget);
        if (items.isEmpty()) yield new Undefined(name);
        Object best = items.get(0);
        for (Object o : items) {
          int c = Values.compare(o, best, budget);
          if (name.equals("min") ? c < 0 : c > 0) best = o;
        }
        yield best;
      }
      case "unique" ->
          unique(
              Values.iterate(v, budget),
              Values.truthy(opt(args, kw, 0, "case_sensitive", false)),
              opt(args, kw, 1, "attribute", null),
              b);
      case "sort" -> {
        boolean reverse = Values.truthy(opt(args, kw, 0, "reverse", false));
        Object attr = opt(args, kw, 2, "attribute", null);
        List<Object> items = copy(Values.iterate(v, budget), budget);
        items.sort(
            (x, y) ->
                Values.compare(
                    attr == null ? x : b.getItem(x, attr),
                    attr == null ? y : b.getItem(y, attr),
                    budget));
        if (reverse) java.util.Collections.reverse(items);
        yield items;
      }
      case "map" -> {
        List<Object> items = Values.iterate(v, budget);
        budget.items(items.size());
        List<Object> out = new ArrayList<>(items.size());
        if (kw.containsKey("attribute")) {
          Object attr = kw.get("attribute");
          for (Object o : items) {
            Object x = b.getItem(o, attr);
            out.add(x instanceof Undefined && kw.containsKey("default") ? kw.get("default") : x);
          }
        } else {
          String filter = Values.str(opt(args, kw, 0, "filter", null), budget);
          List<Object> rest = args.size() > 1 ? args.subList(1, args.size()) : List.of();
          for (Object o : items) {
            budget.step();
            out.add(apply(b, filter, o, rest, Map.of()));
          }
        }
        yield out;
      }
      case "select", "reject", "selectattr", "rejectattr" -> {
        boolean attrMode = name.endsWith("attr");
        boolean keep = name.startsWith("select");
        if (attrMode && args.isEmpty()) throw new TemplateException(name + "() needs an attribute");
        Object attr = attrMode ? args.get(0) : null;
        int testAt = attrMode ? 1 : 0;
        String test = args.size() > testAt ? Values.str(args.get(testAt), budget) : null;
        List<Object> testArgs =
            args.size() > testAt + 1 ? args.subList(testAt + 1, args.size()) : List.of();
        List<Object> items = Values.iterate(v, budget);
        budget.items(items.size());
        List<Object> out = new ArrayList<>();
        for (Object o : items) {
          budget.step();
          Object x = attrMode ? b.getItem(o, attr) : o;
          boolean pass = test == null ? Values.truthy(x) : b.test(test, x, testArgs);
          if (pass == keep) out.add(o);
        }
        yield out;
      }
      case "indent" ->
          indent(
              Values.str(v, budget),
              opt(args, kw, 0, "width", 4L),
              Values.truthy(opt(args, kw, 1, "first", false)),
              Values.truthy(opt(args, kw, 2, "blank", false)),
              budget);
      case "wordcount" ->
          (long) StringMethods.split(Values.str(v, budget), null, -1, budget).size();
      case "batch",
          "slice",
          "groupby",
          "urlize",
          "truncate",
          "wordwrap",
          "xmlattr",
          "format",
          "filesizeformat",
          "pprint",
          "random",
          "striptags",
          "urlencode",
          "attr" ->
          throw new TemplateException("filter '" + name + "' is not supported");
      default -> throw new TemplateException("no filter named '" + name + "'");
    };
  }

  private static Object opt(
      List<Object> args, Map<String, Object> kw, int i, String name, Object fallback) {
    if (i < args.size()) return args.get(i);
    return kw.getOrDefault(name, fallback);
  }

  private static String optString(List<Object> args, Map<String, Object> kw, int i, String name) {
    Object v = opt(args, kw, i, name, null);
    if (v == null || v instanceof String) return (String) v;
    throw new TemplateException("expected a string but got " + Values.typeName(v));
  }

  private static List<Object> copy(List<Object> items, Budget budget) {
    budget.items(items.size());
    return new ArrayList<>(items);
  }

  private static List<Object> pairs(Map<?, ?> m, Budget budget) {
    budget.items(3L * m.size());
    List<Object> out = new ArrayList<>(m.size());
    m.forEach((k, val) -> out.add(new Tuple(Arrays.asList(k, val))));
    return out;
  }

  /** {@code width} spaces (Python: {@code ' ' * width}; none when negative). */
  static String spaces(Object width, Budget budget) {
    long n = Math.max(0, Values.asLong(width));
    budget.chars(n);
    return " ".repeat((int) n);
  }

  /** Jinja2's {@code indent}: the size of the result is known, and asked for, before building. */
  private static String indent(
      String s, Object width, boolean first, boolean blank, Budget budget) {
    budget.work(s.length());
    long indented = 0;
    for (int start = 0, line = 0; start <= s.length(); line++) {
      int end = s.indexOf('\n', start);
      if (end < 0) end = s.length();
      if ((line > 0 || first) && (blank || end > start)) indented++;
      start = end + 1;
    }
    long padLength = width instanceof String p ? p.length() : Math.max(0, Values.asLong(width));
    if (indented == 0 || padLength == 0) return s;
    budget.chars(
        Math.multiplyHigh(padLength, indented) != 0
            ? Long.MAX_VALUE
            : s.length() + padLength * indented);
    String pad = width instanceof String p ? p : " ".repeat((int) padLength);
    StringBuilder sb = new StringBuilder();
    for (int start = 0, line = 0; start <= s.length(); line++) {
      int end = s.indexOf('\n', start);
      if (end < 0) end = s.length();
      if (line > 0) sb.append('\n');
      if ((line > 0 || first) && (blank || end > start)) sb.append(pad);
      sb.append(s, start, end);
      start = end + 1;
    }
    return sb.toString();
  }

  private static String escapeHtml(String s, Budget budget) {
    long extra = 0;
    for (int i = 0; i < s.length(); i++)
      extra +=
          switch (s.charAt(i)) {
            case '&', '<', '>' -> 4;
            case '\'', '"' -> 4;
            default -> 0;
          };
    if (extra == 0) return s;
    budget.chars(s.length() + extra);
    StringBuilder sb = new StringBuilder(s.length() + (int) extra);
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '&' -> sb.append("&amp;");
        case '>' -> sb.append("&gt;");
        case '<' -> sb.append("&lt;");
        case '\'' -> sb.append("&#39;");
        case '"' -> sb.append("&#34;");
        default -> sb.append(c);
      }
    }
    return sb.toString();
  }

  /**
   * Jinja2's {@code unique}: first occurrences, by Python hash equality (1 == 1.0 == True), strings
   * compared case-insensitively unless {@code case_sensitive}; linear, as Jinja2's set is.
   */
  private static List<Object> unique(
      List<Object> items, boolean caseSensitive, Object attribute, Builtins b) {
    Budget budget = b.budget;
    budget.items(2L * items.size());
    java.util.Set<Object> seen = new java.util.HashSet<>();
    List<Object> out = new ArrayList<>();
    for (Object o : items) {
      budget.work(1);
      Object key = attribute == null ? o : b.getItem(o, attribute);
      if (!caseSensitive && key instanceof String s) {
        budget.chars(s.length());
        key = s.toLowerCase(java.util.Locale.ROOT);
      }
      if (seen.add(hashKey(key, budget))) out.add(o);
    }
    return out;
  }

  /** A Java key that is equal exactly when Python's set would consider two values the same. */
  private static Object hashKey(Object v, Budget budget) {
    if (v instanceof Double d) {
      if (d.isNaN()) return new Object();
      if (d == Math.rint(d) && !d.isInfinite()) return PyInt.ofDouble(d);
      return d;
    }
    if (v instanceof Boolean bool) return bool ? 1L : 0L;
    if (v == null) return Arrays.asList((Object) null);
    if (v instanceof Tuple t) {
      if (!Values.hashable(t, budget)) throw new TemplateException("unhashable type: 'list'");
      List<Object> keys = new ArrayList<>();
      for (Object o : t.items()) keys.add(hashKey(o, budget));
      return new Tuple(keys);
    }
    if (v instanceof List || v instanceof Map)
      throw new TemplateException("unhashable type: '" + Values.typeName(v) + "'");
    return v;
  }

  /**
   * Jinja2's {@code round}: {@code common} is Python's {@code round()} (an int stays an int);
   * {@code ceil}/{@code floor} round the scaled float. Precision is clamped to what a double holds.
   */
  private static Object round(Object v, Object precisionArg, Object methodArg, Budget budget) {
    long precision = Values.asLong(precisionArg);
    String method = Values.str(methodArg, budget);
    if (!method.equals("common") && !method.equals("ceil") && !method.equals("floor"))
      throw new TemplateException("method must be common, ceil or floor");
    if (Values.isIntegral(v) && method.equals("common") && precision >= 0) return PyInt.positive(v);
    double d = Values.asDouble(v);
    if (Double.isNaN(d) || Double.isInfinite(d)) return d;
    int scale = (int) Math.max(-400, Math.min(400, precision));
    RoundingMode mode =
        switch (method) {
          case "ceil" -> RoundingMode.CEILING;
          case "floor" -> RoundingMode.FLOOR;
          default -> RoundingMode.HALF_EVEN; // Python's round() on the exact binary value
        };
    return new BigDecimal(d).setScale(scale, mode).doubleValue();
  }

  private static Object toInt(Object v, Object fallback) {
    if (PyInt.is(v)) return PyInt.positive(v);
    if (v instanceof Double d) {
      if (d.isNaN() || d.isInfinite()) return fallback;
      return PyInt.ofDouble(d);
    }
    if (v instanceof String s) {
      String digits = s.strip().replace("_", "");
      if (digits.matches("[+-]?[0-9]+")) {
        if (digits.length() > PyInt.MAX_DIGITS + 1) return fallback;
        return PyInt.parse(digits.startsWith("+") ? digits.substring(1) : digits);
      }
      try {
        double d = Double.parseDouble(s.strip());
        return Double.isNaN(d) || Double.isInfinite(d) ? fallback : PyInt.ofDouble(d);
      } catch (NumberFormatException e) {
        return fallback;
      }
    }
    return fallback;
  }

  private static Object toFloat(Object v, Object fallback) {
    if (v instanceof Double) return v;
    if (Values.isIntegral(v)) return Values.asDouble(v);
    if (v instanceof String s) {
      try {
        return Double.parseDouble(s.strip());
      } catch (NumberFormatException e) {
        return fallback;
      }
    }
    return fallback;
  }
}
