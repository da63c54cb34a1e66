package dev.troupe.engine.template;

import dev.troupe.engine.ChatTemplate.TemplateException;
import dev.troupe.engine.template.Values.Callable;
import dev.troupe.engine.template.Values.Namespace;
import dev.troupe.engine.template.Values.Tuple;
import dev.troupe.engine.template.Values.Undefined;
import java.math.BigInteger;
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

  /** Jinja2's sandbox refuses larger ranges ({@code jinja2.sandbox.MAX_RANGE}). */
  static final int MAX_RANGE = 100_000;

  private final Clock clock;
  final Budget budget;
  private final Map<String, Object> globals = new LinkedHashMap<>();

  Builtins(Clock clock, Budget budget) {
    this.clock = clock;
    this.budget = budget;
    globals.put(
        "raise_exception",
        (Callable)
            (args, kwargs) -> {
              throw new TemplateException(
                  args.isEmpty() ? "raise_exception" : Values.str(args.get(0), budget));
            });
    globals.put(
        "strftime_now",
        (Callable)
            (args, kwargs) -> {
              String format = Values.str(arg(args, 0, "format"), budget);
              budget.chars(5L * format.length()); // %B (2 chars) is at most 9: "September"
              return Strftime.format(format, ZonedDateTime.now(this.clock));
            });
    globals.put(
        "namespace",
        (Callable)
            (args, kwargs) -> {
              Namespace ns = new Namespace();
              for (Object a : args) {
                if (!(a instanceof Map<?, ?> m))
                  throw new TemplateException("namespace() takes a dict or keywords");
                budget.items(m.size());
                m.forEach((k, v) -> ns.attrs.put(Values.str(k, budget), v));
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
              for (Object a : args)
                if (a instanceof Map<?, ?> m) {
                  budget.items(m.size());
                  out.putAll(m);
                } else throw new TemplateException("dict() takes a dict or keywords");
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

  /** Python's {@code range}, as a list, at most {@link #MAX_RANGE} long as in Jinja2's sandbox. */
  private List<Object> range(List<Object> args) {
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
    BigInteger span = BigInteger.valueOf(stop).subtract(BigInteger.valueOf(start));
    BigInteger stride = BigInteger.valueOf(step).abs();
    long length =
        span.signum() != Long.signum(step)
            ? 0
            : span.abs()
                .add(stride)
                .subtract(BigInteger.ONE)
                .divide(stride)
                .min(BigInteger.valueOf(Long.MAX_VALUE))
                .longValue();
    if (length > MAX_RANGE)
      throw new TemplateException(
          "Range too big. The sandbox blocks ranges larger than MAX_RANGE (" + MAX_RANGE + ").");
    budget.items(length);
    List<Object> out = new ArrayList<>((int) length);
    for (long i = 0, v = start; i < length; i++, v += step) out.add(v);
    return out;
  }

  // ---- attribute and item access

  Object getAttr(Object obj, String name) {
    if (obj instanceof Undefined u) throw u.error();
    if (MUTATING.contains(name) && (obj instanceof List || obj instanceof Map))
      throw new TemplateException(
          "access to attribute '" + name + "' of '" + Values.typeName(obj) + "' object is unsafe.");
    if (obj instanceof String s && StringMethods.has(name))
      return (Callable) (args, kwargs) -> StringMethods.call(s, name, args, kwargs, budget);
    if (obj instanceof Map<?, ?> m) {
      if (DICT_METHODS.contains(name))
        return (Callable) (args, kwargs) -> dictMethod(m, name, args);
      return Values.containsKey(m, name, budget)
          ? Values.get(m, name, budget)
          : new Undefined(name);
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
      // An unhashable key is Python's TypeError, which Jinja2's getitem turns into undefined.
      if (Values.containsKey(m, key, budget)) return Values.get(m, key, budget);
      return key instanceof String s ? getAttr(obj, s) : new Undefined(describe(key));
    }
    List<Object> list = Values.asList(obj);
    if (list != null && Values.isIntegral(key)) {
      long i = PyInt.clampToLong(key);
      if (i < 0) i += list.size();
      return i >= 0 && i < list.size() ? list.get((int) i) : new Undefined(describe(key));
    }
    if (obj instanceof String s && Values.isIntegral(key)) {
      long i = PyInt.clampToLong(key);
      long n = s.codePointCount(0, s.length());
      budget.work(s.length());
      if (i < 0) i += n;
      if (i < 0 || i >= n) return new Undefined(describe(key));
      int at = s.offsetByCodePoints(0, (int) i);
      return new String(Character.toChars(s.codePointAt(at)));
    }
    if (key instanceof String s) return getAttr(obj, s);
    if (obj == null) throw new TemplateException("'NoneType' object is not subscriptable");
    return new Undefined(describe(key));
  }

  /** The name of an undefined item, short whatever the key. */
  private static String describe(Object key) {
    if (key instanceof String s) return s.length() > 100 ? s.substring(0, 100) + "..." : s;
    if (key instanceof Long || key instanceof BigInteger || key instanceof Boolean)
      return "[" + key + "]";
    return "[" + Values.typeName(key) + "]";
  }

  Object slice(Object obj, Object start, Object stop, Object step) {
    if (obj instanceof Undefined u) throw u.error();
    long st = step == null ? 1 : PyInt.clampToLong(step);
    if (st == 0) throw new TemplateException("slice step cannot be zero");
    if (obj instanceof String s) {
      budget.items(s.length());
      int[] cps = s.codePoints().toArray();
      long[] range = sliceIndices(cps.length, start, stop, st);
      budget.chars(2 * sliceLength(range, st));
      StringBuilder sb = new StringBuilder();
      for (long i = range[0]; st > 0 ? i < range[1] : i > range[1]; i += st)
        sb.appendCodePoint(cps[(int) i]);
      return sb.toString();
    }
    List<Object> list = Values.asList(obj);
    if (list == null)
      throw new TemplateException("'" + Values.typeName(obj) + "' object is not subscriptable");
    long[] range = sliceIndices(list.size(), start, stop, st);
    budget.items(sliceLength(range, st));
    List<Object> out = new ArrayList<>();
    for (long i = range[0]; st > 0 ? i < range[1] : i > range[1]; i += st)
      out.add(list.get((int) i));
    return obj instanceof Tuple ? new Tuple(out) : out;
  }

  private static long sliceLength(long[] range, long step) {
    long span = step > 0 ? range[1] - range[0] : range[0] - range[1];
    if (span <= 0) return 0;
    long abs = step > 0 ? step : -step;
    return (span + abs - 1) / abs;
  }

  /** Python's {@code slice.indices}: {start, stop}, clamped to the sequence. */
  private static long[] sliceIndices(int n, Object startV, Object stopV, long step) {
    if (step > 0)
      return new long[] {
        startV == null ? 0 : clampIndex(PyInt.clampToLong(startV), n, 0, n),
        stopV == null ? n : clampIndex(PyInt.clampToLong(stopV), n, 0, n)
      };
    return new long[] {
      startV == null ? n - 1 : clampIndex(PyInt.clampToLong(startV), n, -1, n - 1),
      stopV == null ? -1 : clampIndex(PyInt.clampToLong(stopV), n, -1, n - 1)
    };
  }

  private static long clampIndex(long i, int n, long lo, long hi) {
    if (i < 0) i = i < -(1L << 62) ? -(1L << 62) : i + n;
    return Math.max(lo, Math.min(hi, i));
  }

  private Object dictMethod(Map<?, ?> m, String name, List<Object> args) {
    if (!name.equals("get")) budget.items((name.equals("items") ? 3L : 1L) * m.size());
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
        if (!Values.hashable(key, budget))
          throw new TemplateException("unhashable type: '" + Values.typeName(key) + "'");
        yield Values.containsKey(m, key, budget)
            ? Values.get(m, key, budget)
            : (args.size() > 1 ? args.get(1) : null);
      }
    };
  }

  private Object listMethod(List<Object> list, String name, List<Object> args) {
    return switch (name) {
      case "copy" -> {
        budget.items(list.size());
        yield new ArrayList<>(list);
      }
      case "count" -> {
        long n = 0;
        for (Object o : list) if (Values.equal(o, arg(args, 0, "value"), budget)) n++;
        yield n;
      }
      default -> {
        for (int i = 0; i < list.size(); i++)
          if (Values.equal(list.get(i), arg(args, 0, "value"), budget)) yield (long) i;
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
      case "integer" -> v instanceof Long || v instanceof BigInteger;
      case "float" -> v instanceof Double;
      case "mapping" -> v instanceof Map;
      case "sequence" -> v instanceof String || v instanceof Map || Values.asList(v) != null;
      case "iterable" ->
          v instanceof String
              || v instanceof Map
              || Values.asList(v) != null
              || v instanceof Undefined;
      case "callable" -> v instanceof Callable;
      case "odd" -> PyInt.signum(PyInt.modulo(integer(v), 2L)) != 0;
      case "even" -> PyInt.signum(PyInt.modulo(integer(v), 2L)) == 0;
      case "divisibleby" ->
          PyInt.signum(PyInt.modulo(integer(v), integer(arg(args, 0, "num")))) == 0;
      case "lower" -> v instanceof String s && caseTest(s, false);
      case "upper" -> v instanceof String s && caseTest(s, true);
      case "eq", "equalto", "==" -> Values.equal(v, arg(args, 0, "other"), budget);
      case "ne", "!=" -> !Values.equal(v, arg(args, 0, "other"), budget);
      case "lt", "lessthan", "<" -> Values.compare(v, arg(args, 0, "other"), budget) < 0;
      case "le", "<=" -> Values.compare(v, arg(args, 0, "other"), budget) <= 0;
      case "gt", "greaterthan", ">" -> Values.compare(v, arg(args, 0, "other"), budget) > 0;
      case "ge", ">=" -> Values.compare(v, arg(args, 0, "other"), budget) >= 0;
      case "in" -> Values.contains(arg(args, 0, "seq"), v, budget);
      case "sameas" -> {
        Object o = arg(args, 0, "other");
        yield v == o || (v instanceof Boolean && v.equals(o));
      }
      default -> throw new TemplateException("no test named '" + name + "'");
    };
  }

  private static Object integer(Object v) {
    if (!Values.isIntegral(v))
      throw new TemplateException("expected an integer but got " + Values.typeName(v));
    return v;
  }

  /** Jinja2's {@code lower}/{@code upper} tests: {@code str.islower()}/{@code isupper()}. */
  private boolean caseTest(String s, boolean upper) {
    budget.chars(2L * s.length());
    String lower = s.toLowerCase(java.util.Locale.ROOT);
    String up = s.toUpperCase(java.util.Locale.ROOT);
    return upper ? s.equals(up) && !s.equals(lower) : s.equals(lower) && !s.equals(up);
  }
}
