package dev.troupe.engine.template;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.engine.ChatTemplate.TemplateException;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Python value semantics for template values. The value universe is closed: {@code null} (None),
 * Boolean, Long or {@link BigInteger} (int, see {@link PyInt}), Double (float), String, {@link
 * List} (list), {@link Tuple}, {@link Map} (dict, insertion-ordered), {@link Undefined}, {@link
 * Namespace}, {@link Callable}. Inputs are converted into it ({@link #fromJava}); nothing else is
 * ever reachable from a template.
 *
 * <p>Everything that recurses into a value (printing, serializing, comparing, hashing as a dict
 * key) counts its nesting on the render's {@link Budget}, so a value nested a million levels deep
 * is an error, not a {@code StackOverflowError}.
 */
final class Values {
  private Values() {}

  /** Jinja2's default {@code Undefined}: prints empty, iterates empty, is false, errors on use. */
  record Undefined(String name) {
    TemplateException error() {
      return new TemplateException("'" + name + "' is undefined");
    }
  }

  /** A Python tuple (prints with parentheses). */
  record Tuple(List<Object> items) {
    Tuple {
      items = java.util.Collections.unmodifiableList(new ArrayList<>(items));
    }
  }

  /** Jinja2's {@code namespace()}: the one mutable object a template may assign attributes on. */
  static final class Namespace {
    final Map<String, Object> attrs = new LinkedHashMap<>();
  }

  /** Jinja2's {@code loop} variable of one iteration. */
  record Loop(List<Object> items, int index0) {
    Object attr(String name) {
      int n = items.size();
      return switch (name) {
        case "index" -> (long) index0 + 1;
        case "index0" -> (long) index0;
        case "revindex" -> (long) (n - index0);
        case "revindex0" -> (long) (n - index0 - 1);
        case "first" -> index0 == 0;
        case "last" -> index0 == n - 1;
        case "length" -> (long) n;
        case "depth" -> 1L;
        case "depth0" -> 0L;
        case "previtem" -> index0 > 0 ? items.get(index0 - 1) : new Undefined("previtem");
        case "nextitem" -> index0 < n - 1 ? items.get(index0 + 1) : new Undefined("nextitem");
        case "cycle" ->
            (Callable)
                (args, kwargs) -> {
                  if (args.isEmpty()) throw new TemplateException("no items for cycling given");
                  return args.get(index0 % args.size());
                };
        default -> new Undefined(name);
      };
    }
  }

  /** A function value: macros, globals, bound string/dict methods, {@code loop.cycle}. */
  interface Callable {
    Object call(List<Object> args, Map<String, Object> kwargs);
  }

  /**
   * Converts caller-supplied JSON-like Java values into template values (deep copy); the nesting
   * counts on {@code budget} (a cyclic or absurdly deep input is an error, not a stack overflow).
   */
  static Object fromJava(Object v, Budget budget) {
    if (v == null || v instanceof String || v instanceof Boolean || v instanceof Long) return v;
    if (v instanceof Integer || v instanceof Short || v instanceof Byte)
      return ((Number) v).longValue();
    if (v instanceof BigInteger b) return PyInt.of(b);
    if (v instanceof BigDecimal d) return d.doubleValue();
    if (v instanceof Double || v instanceof Float) return ((Number) v).doubleValue();
    if (v instanceof Character c) return c.toString();
    if (v instanceof JsonNode node) return fromJson(node, budget);
    budget.enter();
    try {
      if (v instanceof Map<?, ?> m) {
        Map<Object, Object> out = new LinkedHashMap<>();
        m.forEach((k, val) -> out.put(fromJava(k, budget), fromJava(val, budget)));
        return out;
      }
      if (v instanceof Collection<?> c) {
        List<Object> out = new ArrayList<>(c.size());
        for (Object o : c) out.add(fromJava(o, budget));
        return out;
      }
      if (v instanceof Object[] a) return fromJava(java.util.Arrays.asList(a), budget);
    } finally {
      budget.exit();
    }
    throw new TemplateException("unsupported template input type " + v.getClass().getSimpleName());
  }

  /** Jackson trees, as the HTTP layer may hand them over (tool schemas, arguments). */
  private static Object fromJson(JsonNode node, Budget budget) {
    if (node == null || node.isNull() || node.isMissingNode()) return null;
    if (node.isTextual()) return node.textValue();
    if (node.isBoolean()) return node.booleanValue();
    if (node.isIntegralNumber()) return PyInt.of(node.bigIntegerValue());
    if (node.isNumber()) return node.doubleValue();
    budget.enter();
    try {
      if (node.isArray()) {
        List<Object> out = new ArrayList<>(node.size());
        for (JsonNode item : node) out.add(fromJson(item, budget));
        return out;
      }
      if (node.isObject()) {
        Map<Object, Object> out = new LinkedHashMap<>();
        for (Map.Entry<String, JsonNode> e : node.properties())
          out.put(e.getKey(), fromJson(e.getValue(), budget));
        return out;
      }
    } finally {
      budget.exit();
    }
    throw new TemplateException("unsupported JSON node " + node.getNodeType());
  }

  static boolean truthy(Object v) {
    if (v == null || v instanceof Undefined) return false;
    if (v instanceof Boolean b) return b;
    if (v instanceof Long l) return l != 0;
    if (v instanceof BigInteger b) return b.signum() != 0;
    if (v instanceof Double d) return d != 0.0;
    if (v instanceof String s) return !s.isEmpty();
    if (v instanceof List<?> l) return !l.isEmpty();
    if (v instanceof Tuple t) return !t.items().isEmpty();
    if (v instanceof Map<?, ?> m) return !m.isEmpty();
    return true;
  }

  static String typeName(Object v) {
    if (v == null) return "NoneType";
    if (v instanceof Boolean) return "bool";
    if (v instanceof Long || v instanceof BigInteger) return "int";
    if (v instanceof Double) return "float";
    if (v instanceof String) return "str";
    if (v instanceof List) return "list";
    if (v instanceof Tuple) return "tuple";
    if (v instanceof Map) return "dict";
    if (v instanceof Undefined) return "Undefined";
    if (v instanceof Namespace) return "Namespace";
    return "function";
  }

  static boolean isNumber(Object v) {
    return PyInt.is(v) || v instanceof Double;
  }

  /** Python int or bool; floats are not ints. */
  static boolean isIntegral(Object v) {
    return PyInt.is(v);
  }

  /** An int that must fit in 64 bits (a count, an index, a width), as Python's index-sized int. */
  static long asLong(Object v) {
    if (v instanceof Long l) return l;
    if (v instanceof Boolean b) return b ? 1 : 0;
    if (v instanceof BigInteger)
      throw new TemplateException("cannot fit 'int' into an index-sized integer");
    throw new TemplateException("expected an integer but got " + typeName(v));
  }

  static double asDouble(Object v) {
    if (v instanceof Double d) return d;
    return PyInt.toDouble(v);
  }

  /** A sequence view (list, tuple) or null. */
  static List<Object> asList(Object v) {
    if (v instanceof List<?> l) {
      @SuppressWarnings("unchecked")
      List<Object> list = (List<Object>) l;
      return list;
    }
    if (v instanceof Tuple t) return t.items();
    return null;
  }

  /**
   * Python iteration: lists, tuples, dict keys, string characters; Undefined is empty. Lists and
   * tuples are returned as they are (callers never modify them); a new list is charged to {@code
   * budget}.
   */
  static List<Object> iterate(Object v, Budget budget) {
    List<Object> list = asList(v);
    if (list != null) return list;
    if (v instanceof Map<?, ?> m) {
      budget.items(m.size());
      return new ArrayList<>(m.keySet());
    }
    if (v instanceof String s) {
      budget.items(s.length());
      budget.allocate((long) Budget.STRING_BYTES * s.length());
      List<Object> chars = new ArrayList<>();
      s.codePoints().forEach(cp -> chars.add(new String(Character.toChars(cp))));
      return chars;
    }
    if (v instanceof Undefined) return List.of();
    throw new TemplateException("'" + typeName(v) + "' object is not iterable");
  }

  static long length(Object v, Budget budget) {
    if (v instanceof String s) {
      budget.work(s.length());
      return s.codePointCount(0, s.length());
    }
    List<Object> list = asList(v);
    if (list != null) return list.size();
    if (v instanceof Map<?, ?> m) return m.size();
    if (v instanceof Undefined) return 0;
    throw new TemplateException("object of type '" + typeName(v) + "' has no len()");
  }

  // ---- equality and ordering

  static boolean equal(Object a, Object b, Budget budget) {
    budget.work(1);
    if (a instanceof Undefined || b instanceof Undefined)
      return a instanceof Undefined && b instanceof Undefined;
    if (a == null || b == null) return a == b;
    if (isNumber(a) && isNumber(b)) {
      if (isIntegral(a) && isIntegral(b)) return PyInt.compare(a, b) == 0;
      return !isNaN(a) && !isNaN(b) && compareNumbers(a, b) == 0;
    }
    if (a instanceof String sa && b instanceof String sb) {
      if (sa.length() == sb.length()) budget.work(sa.length());
      return sa.equals(sb);
    }
    List<Object> la = a instanceof List ? asList(a) : null;
    List<Object> lb = b instanceof List ? asList(b) : null;
    if (la != null && lb != null) return listEqual(la, lb, budget);
    if (a instanceof Tuple ta && b instanceof Tuple tb)
      return listEqual(ta.items(), tb.items(), budget);
    if (a instanceof Map<?, ?> ma && b instanceof Map<?, ?> mb) {
      if (ma.size() != mb.size()) return false;
      budget.enter();
      try {
        for (Map.Entry<?, ?> e : ma.entrySet()) {
          budget.work(1);
          if (!containsKey(mb, e.getKey(), budget)
              || !equal(e.getValue(), get(mb, e.getKey(), budget), budget)) return false;
        }
      } finally {
        budget.exit();
      }
      return true;
    }
    return a == b;
  }

  private static boolean listEqual(List<Object> a, List<Object> b, Budget budget) {
    if (a.size() != b.size()) return false;
    budget.enter();
    try {
      for (int i = 0; i < a.size(); i++) {
        budget.work(1);
        if (!equal(a.get(i), b.get(i), budget)) return false;
      }
    } finally {
      budget.exit();
    }
    return true;
  }

  private static boolean isNaN(Object v) {
    return v instanceof Double d && d.isNaN();
  }

  /** Two numbers, at least one a float: exact, as Python compares int with float. */
  private static int compareNumbers(Object a, Object b) {
    if (isNaN(a) || isNaN(b)) return isNaN(a) ? 1 : -1; // NaN is never equal
    if (a instanceof Double x && b instanceof Double y) return x < y ? -1 : x > y ? 1 : 0;
    if (a instanceof Double x) return -PyInt.compareWithDouble(b, x);
    if (b instanceof Double y) return PyInt.compareWithDouble(a, y);
    return PyInt.compare(a, b);
  }

  static int compare(Object a, Object b, Budget budget) {
    budget.work(1);
    if (isNumber(a) && isNumber(b)) {
      if (isIntegral(a) && isIntegral(b)) return PyInt.compare(a, b);
      return compareNumbers(a, b);
    }
    if (a instanceof String sa && b instanceof String sb) {
      budget.work(Math.min(sa.length(), sb.length()));
      return compareCodePoints(sa, sb);
    }
    List<Object> la = asList(a);
    List<Object> lb = asList(b);
    if (la != null && lb != null && a.getClass() == b.getClass()) {
      budget.enter();
      try {
        for (int i = 0; i < Math.min(la.size(), lb.size()); i++) {
          budget.work(1);
          if (!equal(la.get(i), lb.get(i), budget)) return compare(la.get(i), lb.get(i), budget);
        }
      } finally {
        budget.exit();
      }
      return Integer.compare(la.size(), lb.size());
    }
    throw new TemplateException(
        "'<' not supported between instances of '" + typeName(a) + "' and '" + typeName(b) + "'");
  }

  private static int compareCodePoints(String a, String b) {
    Iterator<Integer> ia = a.codePoints().iterator();
    Iterator<Integer> ib = b.codePoints().iterator();
    while (ia.hasNext() && ib.hasNext()) {
      int c = Integer.compare(ia.next(), ib.next());
      if (c != 0) return c;
    }
    return Boolean.compare(ia.hasNext(), ib.hasNext());
  }

  /** Python {@code in}. */
  static boolean contains(Object container, Object item, Budget budget) {
    if (container instanceof String s) {
      if (!(item instanceof String sub))
        throw new TemplateException(
            "'in <string>' requires string as left operand, not " + typeName(item));
      budget.work(s.length());
      return s.contains(sub);
    }
    if (container instanceof Map<?, ?> m) {
      if (!hashable(item, budget))
        throw new TemplateException("unhashable type: '" + typeName(item) + "'");
      return containsKey(m, item, budget);
    }
    for (Object o : iterate(container, budget)) {
      budget.work(1);
      if (equal(o, item, budget)) return true;
    }
    return false;
  }

  /**
   * Whether Python could use {@code key} as a dict key: not a list or dict, nor a tuple holding
   * one. Java would hash such a key recursively (and a deeply nested one overflows the stack), so
   * every dict lookup checks this first.
   */
  static boolean hashable(Object key, Budget budget) {
    if (key instanceof List || key instanceof Map) return false;
    if (!(key instanceof Tuple t)) return true;
    budget.enter();
    try {
      for (Object o : t.items()) {
        budget.work(1);
        if (!hashable(o, budget)) return false;
      }
    } finally {
      budget.exit();
    }
    return true;
  }

  /** Dict lookup with Python key equality (1 == 1.0 == True); {@code key} must be hashable. */
  static boolean containsKey(Map<?, ?> m, Object key, Budget budget) {
    if (!hashable(key, budget)) return false;
    if (m.containsKey(key)) return true;
    if (isNumber(key))
      for (Object k : m.keySet()) {
        budget.work(1);
        if (isNumber(k) && equal(k, key, budget)) return true;
      }
    return false;
  }

  static Object get(Map<?, ?> m, Object key, Budget budget) {
    if (!hashable(key, budget)) return null;
    if (m.containsKey(key)) return m.get(key);
    if (isNumber(key))
      for (Map.Entry<?, ?> e : m.entrySet()) {
        budget.work(1);
        if (isNumber(e.getKey()) && equal(e.getKey(), key, budget)) return e.getValue();
      }
    return null;
  }

  // ---- str()

  /** Python {@code str(v)} as Jinja prints it ({@code {{ v }}}). */
  static String str(Object v, Budget budget) {
    if (v instanceof String s) return s;
    if (v instanceof Undefined) return "";
    return Repr.repr(v, budget);
  }

  /** Python's {@code str.isspace} for one code point. */
  static boolean isPySpace(int cp) {
    return (cp >= 9 && cp <= 13)
        || (cp >= 0x1c && cp <= 0x1f)
        || cp == 0x85
        || Character.isSpaceChar(cp);
  }
}
