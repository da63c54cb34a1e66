package dev.troupe.engine.template;

import dev.troupe.engine.ChatTemplate.TemplateException;
import dev.troupe.engine.template.Values.Callable;
import dev.troupe.engine.template.Values.Namespace;
import dev.troupe.engine.template.Values.Tuple;
import dev.troupe.engine.template.Values.Undefined;
import java.time.Clock;
import java.time.ZonedDateTime;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Globals, filters, tests and attribute access of the sandbox. Attribute access follows Jinja2's
 * {@code getattr}: Python attributes (str and dict methods) first, then items; subscription the
 * other way round. Mutating methods of lists and dicts are refused, as in Jinja2's {@code
 * ImmutableSandboxedEnvironment}.
 */
final class Builtins {
  private static final Set<String> MUTATING =
      Set.of(
          "append",
          "extend",
          "insert",
          "pop",
          "remove",
          "clear",
          "sort",
          "reverse",
          "update",
          "setdefault",
          "popitem",
          "__setitem__",
          "__delitem__");
  private static final Set<String> DICT_METHODS = Set.of("items", "keys", "values", "get", "copy");
  private static final Set<String> LIST_METHODS = Set.of("index", "count", "copy");

  private final Clock clock;
  private final Map<String, Object> globals = new LinkedHashMap<>();

  Builtins(Clock clock) {
    this.clock = clock;
    globals.put(
        "raise_exception",
        (Callable)
            (args, kwargs) -> {
              throw new TemplateException(
                  args.isEmpty() ? "raise_exception" : Values.str(args.get(0)));
            });
    globals.put(
        "strftime_now",
        (Callable)
            (args, kwargs) ->
                Strftime.format(Values.str(arg(args, 0, "format")), ZonedDateTime.now(this.clock)));
    globals.put(
        "namespace",
        (Callable)
            (args, kwargs) -> {
              Namespace ns = new Namespace();
              for (Object a : args) {
                if (!(a instanceof Map<?, ?> m))
                  throw new TemplateException("namespace() takes a dict or keywords");
                m.forEach((k, v) -> ns.attrs.put(Values.str(k), v));
              }
              ns.attrs.putAll(kwargs);
              return ns;
            });
    globals.put("range", (Callable) (args, kwargs) -> range(args));
    globals.put(
        "dict",
        (Callable)
            (args, kwargs) -> {
              Map<Object, Object> out = new LinkedHashMap<>();
              for (Object a : args) if (a instanceof Map<?, ?> m) out.putAll(m);
              out.putAll(kwargs);
              return out;
            });
  }

  Map<String, Object> globals() {
    return globals;
  }

  private static Object arg(List<Object> args, int i, String name) {
    if (i >= args.size()) throw new TemplateException("missing argument '" + name + "'");
    return args.get(i);
  }

  private static List<Object> range(List<Object> args) {
    long start = 0;
    long stop;
    long step = 1;
    if (args.size() == 1) stop = Values.asLong(args.get(0));
    else {
      start = Values.asLong(arg(args, 0, "start"));
      stop = Values.asLong(arg(args, 1, "stop"));
      if (args.size() > 2) step = Values.asLong(args.get(2));
    }
    if (step == 0) throw new TemplateException("range() arg 3 must not be zero");
    List<Object> out = new ArrayList<>();
    for (long i = start; step > 0 ? i < stop : i > stop; i += step) {
      out.add(i);
      if (out.size() > 1_000_000) throw new TemplateException("range too large");
    }
    return out;
  }

  // ---- attribute and item access

  Object getAttr(Object obj, String name) {
    if (obj instanceof Undefined u) throw u.error();
    if (MUTATING.contains(name) && (obj instanceof List || obj instanceof Map))
      throw new TemplateException(
          "access to attribute '" + name + "' of '" + Values.typeName(obj) + "' object is unsafe.");
    if (obj instanceof String s && StringMethods.has(name))
      return (Callable) (args, kwargs) -> StringMethods.call(s, name, args, kwargs);
    if (obj instanceof Map<?, ?> m) {
      if (DICT_METHODS.contains(name))
        return (Callable) (args, kwargs) -> dictMethod(m, name, args);
      return Values.containsKey(m, name) ? Values.get(m, name) : new Undefined(name);
    }
    if (obj instanceof Values.Loop loop) return loop.attr(name);
    if (obj instanceof Namespace ns)
      return ns.attrs.containsKey(name) ? ns.attrs.get(name) : new Undefined(name);
    if (Values.asList(obj) != null && LIST_METHODS.contains(name)) {
      List<Object> list = Values.asList(obj);
      return (Callable) (args, kwargs) -> listMethod(list, name, args);
    }
    return new Undefined(name);
  }

  Object getItem(Object obj, Object key) {
    if (obj instanceof Undefined u) throw u.error();
    if (obj instanceof Map<?, ?> m) {
      if (Values.containsKey(m, key)) return Values.get(m, key);
      return key instanceof String s ? getAttr(obj, s) : new Undefined(Values.str(key));
    }
    List<Object> list = Values.asList(obj);
    if (list != null && Values.isIntegral(key)) {
      long i = Values.asLong(key);
      if (i < 0) i += list.size();
      return i >= 0 && i < list.size() ? list.get((int) i) : new Undefined("[" + key + "]");
    }
    if (obj instanceof String s && Values.isIntegral(key)) {
      int[] cps = s.codePoints().toArray();
      long i = Values.asLong(key);
      if (i < 0) i += cps.length;
      return i >= 0 && i < cps.length
          ? new String(cps, (int) i, 1)
          : new Undefined("[" + key + "]");
    }
    if (key instanceof String s) return getAttr(obj, s);
    if (obj == null) throw new TemplateException("'NoneType' object is not subscriptable");
    return new Undefined("[" + Values.str(key) + "]");
  }

  Object slice(Object obj, Object start, Object stop, Object step) {
    if (obj instanceof Undefined u) throw u.error();
    long st = step == null ? 1 : Values.asLong(step);
    if (st == 0) throw new TemplateException("slice step cannot be zero");
    if (obj instanceof String s) {
      int[] cps = s.codePoints().toArray();
      List<Integer> idx = sliceIndices(cps.length, start, stop, st);
      StringBuilder sb = new StringBuilder();
      for (int i : idx) sb.appendCodePoint(cps[i]);
      return sb.toString();
    }
    List<Object> list = Values.asList(obj);
    if (list == null)
      throw new TemplateException("'" + Values.typeName(obj) + "' object is not subscriptable");
    List<Object> out = new ArrayList<>();
    for (int i : sliceIndices(list.size(), start, stop, st)) out.add(list.get(i));
    return obj instanceof Tuple ? new Tuple(out) : out;
  }

  /** Python's {@code slice.indices}. */
  private static List<Integer> sliceIndices(int n, Object startV, Object stopV, long step) {
    long start;
    long stop;
    if (step > 0) {
      start = startV == null ? 0 : clampIndex(Values.asLong(startV), n, 0, n);
      stop = stopV == null ? n : clampIndex(Values.asLong(stopV), n, 0, n);
    } else {
      start = startV == null ? n - 1 : clampIndex(Values.asLong(startV), n, -1, n - 1);
      stop = stopV == null ? -1 : clampIndex(Values.asLong(stopV), n, -1, n - 1);
    }
    List<Integer> out = new ArrayList<>();
    for (long i = start; step > 0 ? i < stop : i > stop; i += step) out.add((int) i);
    return out;
  }

  private static long clampIndex(long i, int n, long lo, long hi) {
    if (i < 0) i += n;
    return Math.max(lo, Math.min(hi, i));
  }

  private static Object dictMethod(Map<?, ?> m, String name, List<Object> args) {
    return switch (name) {
      case "items" -> {
        List<Object> out = new ArrayList<>();
        m.forEach((k, v) -> out.add(new Tuple(java.util.Arrays.asList(k, v))));
        yield out;
      }
      case "keys" -> new ArrayList<Object>(m.keySet());
      case "values" -> new ArrayList<Object>(m.values());
      case "copy" -> new LinkedHashMap<Object, Object>(m);
      default -> { // get
        Object key = arg(args, 0, "key");
        yield Values.containsKey(m, key)
            ? Values.get(m, key)
            : (args.size() > 1 ? args.get(1) : null);
      }
    };
  }

  private static Object listMethod(List<Object> list, String name, List<Object> args) {
    return switch (name) {
      case "copy" -> new ArrayList<>(list);
      case "count" -> {
        long n = 0;
        for (Object o : list) if (Values.equal(o, arg(args, 0, "value"))) n++;
        yield n;
      }
      default -> {
        for (int i = 0; i < list.size(); i++)
          if (Values.equal(list.get(i), arg(args, 0, "value"))) yield (long) i;
        throw new TemplateException("value is not in list");
      }
    };
  }

  // ---- filters

  Object filter(String name, Object v, List<Object> args, Map<String, Object> kwargs) {
    return Filters.apply(this, name, v, args, kwargs);
  }

  // ---- tests

  boolean test(String name, Object v, List<Object> args) {
    return switch (name) {
      case "defined" -> !(v instanceof Undefined);
      case "undefined" -> v instanceof Undefined;
      case "none" -> v == null;
      case "boolean" -> v instanceof Boolean;
      case "true" -> Boolean.TRUE.equals(v);
      case "false" -> Boolean.FALSE.equals(v);
      case "string" -> v instanceof String;
      case "number" -> Values.isNumber(v);
      case "integer" -> v instanceof Long;
      case "float" -> v instanceof Double;
      case "mapping" -> v instanceof Map;
      case "sequence" -> v instanceof String || v instanceof Map || Values.asList(v) != null;
      case "iterable" ->
          v instanceof String
              || v instanceof Map
              || Values.asList(v) != null
              || v instanceof Undefined;
      case "callable" -> v instanceof Callable;
      case "odd" -> Values.asLong(v) % 2 != 0;
      case "even" -> Values.asLong(v) % 2 == 0;
      case "divisibleby" -> Values.asLong(v) % Values.asLong(arg(args, 0, "num")) == 0;
      case "lower" ->
          v instanceof String s && s.equals(s.toLowerCase()) && !s.equals(s.toUpperCase());
      case "upper" ->
          v instanceof String s && s.equals(s.toUpperCase()) && !s.equals(s.toLowerCase());
      case "eq", "equalto", "==" -> Values.equal(v, arg(args, 0, "other"));
      case "ne", "!=" -> !Values.equal(v, arg(args, 0, "other"));
      case "lt", "lessthan", "<" -> Values.compare(v, arg(args, 0, "other")) < 0;
      case "le", "<=" -> Values.compare(v, arg(args, 0, "other")) <= 0;
      case "gt", "greaterthan", ">" -> Values.compare(v, arg(args, 0, "other")) > 0;
      case "ge", ">=" -> Values.compare(v, arg(args, 0, "other")) >= 0;
      case "in" -> Values.contains(arg(args, 0, "seq"), v);
      case "sameas" -> {
        Object o = arg(args, 0, "other");
        yield v == o || (v instanceof Boolean && v.equals(o));
      }
      default -> throw new TemplateException("no test named '" + name + "'");
    };
  }
}
