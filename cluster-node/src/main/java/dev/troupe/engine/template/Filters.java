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

/** Jinja2's built-in filters that chat templates use, plus transformers' {@code tojson}. */
final class Filters {
  private Filters() {}

  static Object apply(
      Builtins b, String name, Object v, List<Object> args, Map<String, Object> kw) {
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
          itemSep = Values.str(seps.get(0));
          keySep = Values.str(seps.get(1));
        }
        String indentStr =
            indent == null
                ? null
                : indent instanceof String s ? s : " ".repeat((int) Values.asLong(indent));
        return new PyJson(
                Values.truthy(kw.getOrDefault("ensure_ascii", false)),
                indentStr,
                itemSep,
                keySep,
                Values.truthy(kw.getOrDefault("sort_keys", false)))
            .dumps(v);
      }
      case "safe", "e", "escape", "forceescape" -> {
        if (name.equals("safe")) return v;
        return Values.str(v)
            .replace("&", "&amp;")
            .replace(">", "&gt;")
            .replace("<", "&lt;")
            .replace("'", "&#39;")
            .replace("\"", "&#34;");
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
          StringMethods.strip(Values.str(v), (String) opt(args, kw, 0, "chars", null), true, true);
      case "length", "count" -> Values.length(v);
      case "list" -> new ArrayList<>(Values.iterate(v));
      case "string" -> Values.str(v);
      case "upper" -> Values.str(v).toUpperCase(java.util.Locale.ROOT);
      case "lower" -> Values.str(v).toLowerCase(java.util.Locale.ROOT);
      case "capitalize" -> {
        String s = Values.str(v);
        yield s.isEmpty()
            ? s
            : s.substring(0, 1).toUpperCase(java.util.Locale.ROOT)
                + s.substring(1).toLowerCase(java.util.Locale.ROOT);
      }
      case "title" -> StringMethods.title(Values.str(v));
      case "replace" -> {
        String s = Values.str(v);
        Object count = opt(args, kw, 2, "count", null);
        yield StringMethods.call(
            s,
            "replace",
            count == null
                ? List.of(Values.str(args.get(0)), Values.str(args.get(1)))
                : List.of(Values.str(args.get(0)), Values.str(args.get(1)), count),
            Map.of());
      }
      case "join" -> {
        String sep = Values.str(opt(args, kw, 0, "d", ""));
        Object attr = opt(args, kw, 1, "attribute", null);
        StringBuilder sb = new StringBuilder();
        boolean first = true;
        for (Object o : Values.iterate(v)) {
          if (!first) sb.append(sep);
          first = false;
          sb.append(Values.str(attr == null ? o : b.getItem(o, attr)));
        }
        yield sb.toString();
      }
      case "first" -> {
        List<Object> items = Values.iterate(v);
        yield items.isEmpty() ? new Undefined("first") : items.get(0);
      }
      case "last" -> {
        List<Object> items = Values.iterate(v);
        yield items.isEmpty() ? new Undefined("last") : items.get(items.size() - 1);
      }
      case "reverse" -> {
        if (v instanceof String s) yield new StringBuilder(s).reverse().toString();
        List<Object> items = new ArrayList<>(Values.iterate(v));
        java.util.Collections.reverse(items);
        yield items;
      }
      case "items" -> {
        if (v instanceof Undefined) yield List.of();
        if (!(v instanceof Map<?, ?> m))
          throw new TemplateException("can only get item pairs from a mapping");
        List<Object> out = new ArrayList<>();
        m.forEach((k, val) -> out.add(new Tuple(Arrays.asList(k, val))));
        yield out;
      }
      case "dictsort" -> {
        if (!(v instanceof Map<?, ?> m)) throw new TemplateException("dictsort needs a mapping");
        List<Object> out = new ArrayList<>();
        m.forEach((k, val) -> out.add(new Tuple(Arrays.asList(k, val))));
        out.sort((x, y) -> Values.compare(((Tuple) x).items().get(0), ((Tuple) y).items().get(0)));
        yield out;
      }
      case "int" -> toInt(v, opt(args, kw, 0, "default", 0L));
      case "float" -> toFloat(v, opt(args, kw, 0, "default", 0.0));
      case "abs" ->
          v instanceof Double d ? (Object) Math.abs(d) : (Object) Math.abs(Values.asLong(v));
      case "round" -> {
        long precision = Values.asLong(opt(args, kw, 0, "precision", 0L));
        String method = Values.str(opt(args, kw, 1, "method", "common"));
        RoundingMode mode =
            switch (method) {
              case "ceil" -> RoundingMode.CEILING;
              case "floor" -> RoundingMode.FLOOR;
              default -> RoundingMode.HALF_EVEN; // Python's round() on the exact binary value
            };
        yield new BigDecimal(Values.asDouble(v)).setScale((int) precision, mode).doubleValue();
      }
      case "sum" -> {
        Object total = opt(args, kw, 1, "start", 0L);
        Object attr = opt(args, kw, 0, "attribute", null);
        for (Object o : Values.iterate(v))
          total = Operators.binary("+", total, attr == null ? o : b.getItem(o, attr));
        yield total;
      }
      case "min", "max" -> {
        List<Object> items = Values.iterate(v);
        if (items.isEmpty()) yield new Undefined(name);
        Object best = items.get(0);
        for (Object o : items) {
          int c = Values.compare(o, best);
          if (name.equals("min") ? c < 0 : c > 0) best = o;
        }
        yield best;
      }
      case "unique" -> {
        List<Object> out = new ArrayList<>();
        for (Object o : Values.iterate(v))
          if (out.stream().noneMatch(x -> Values.equal(x, o))) out.add(o);
        yield out;
      }
      case "sort" -> {
        boolean reverse = Values.truthy(opt(args, kw, 0, "reverse", false));
        Object attr = opt(args, kw, 2, "attribute", null);
        List<Object> items = new ArrayList<>(Values.iterate(v));
        items.sort(
            (x, y) ->
                Values.compare(
                    attr == null ? x : b.getItem(x, attr), attr == null ? y : b.getItem(y, attr)));
        if (reverse) java.util.Collections.reverse(items);
        yield items;
      }
      case "map" -> {
        List<Object> out = new ArrayList<>();
        if (kw.containsKey("attribute")) {
          Object attr = kw.get("attribute");
          for (Object o : Values.iterate(v)) {
            Object x = b.getItem(o, attr);
            out.add(x instanceof Undefined && kw.containsKey("default") ? kw.get("default") : x);
          }
        } else {
          String filter = Values.str(opt(args, kw, 0, "filter", null));
          List<Object> rest = args.size() > 1 ? args.subList(1, args.size()) : List.of();
          for (Object o : Values.iterate(v)) out.add(apply(b, filter, o, rest, Map.of()));
        }
        yield out;
      }
      case "select", "reject", "selectattr", "rejectattr" -> {
        boolean attrMode = name.endsWith("attr");
        boolean keep = name.startsWith("select");
        Object attr = attrMode ? args.get(0) : null;
        int testAt = attrMode ? 1 : 0;
        String test = args.size() > testAt ? Values.str(args.get(testAt)) : null;
        List<Object> testArgs =
            args.size() > testAt + 1 ? args.subList(testAt + 1, args.size()) : List.of();
        List<Object> out = new ArrayList<>();
        for (Object o : Values.iterate(v)) {
          Object x = attrMode ? b.getItem(o, attr) : o;
          boolean pass = test == null ? Values.truthy(x) : b.test(test, x, testArgs);
          if (pass == keep) out.add(o);
        }
        yield out;
      }
      case "indent" -> {
        Object width = opt(args, kw, 0, "width", 4L);
        boolean first = Values.truthy(opt(args, kw, 1, "first", false));
        boolean blank = Values.truthy(opt(args, kw, 2, "blank", false));
        String pad = width instanceof String s ? s : " ".repeat((int) Values.asLong(width));
        String[] lines = Values.str(v).split("\n", -1);
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < lines.length; i++) {
          if (i > 0) sb.append('\n');
          boolean indentThis = (i > 0 || first) && (blank || !lines[i].isEmpty());
          if (indentThis) sb.append(pad);
          sb.append(lines[i]);
        }
        yield sb.toString();
      }
      case "wordcount" -> (long) StringMethods.split(Values.str(v), null, -1).size();
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
          "center",
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

  private static Object toInt(Object v, Object fallback) {
    if (v instanceof Long) return v;
    if (v instanceof Boolean bool) return bool ? 1L : 0L;
    if (v instanceof Double d) return (long) d.doubleValue();
    if (v instanceof String s) {
      try {
        return Long.parseLong(s.strip().replace("_", ""));
      } catch (NumberFormatException e) {
        try {
          return (long) Double.parseDouble(s.strip());
        } catch (NumberFormatException e2) {
          return fallback;
        }
      }
    }
    return fallback;
  }

  private static Object toFloat(Object v, Object fallback) {
    if (v instanceof Double) return v;
    if (Values.isIntegral(v)) return (double) Values.asLong(v);
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
