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
 * Boolean, Long (int), Double (float), String, {@link List} (list), {@link Tuple}, {@link Map}
 * (dict, insertion-ordered), {@link Undefined}, {@link Namespace}, {@link Callable}. Inputs are
 * converted into it ({@link #fromJava}); nothing else is ever reachable from a template.
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

  /** Converts caller-supplied JSON-like Java values into template values (deep copy). */
  static Object fromJava(Object v) {
    if (v == null || v instanceof String || v instanceof Boolean || v instanceof Long) return v;
    if (v instanceof Integer || v instanceof Short || v instanceof Byte)
      return ((Number) v).longValue();
    if (v instanceof BigInteger b) {
      if (b.bitLength() < 64) return b.longValue();
      return b.doubleValue(); // Python would keep an exact int; beyond 2^63 we only print it
    }
    if (v instanceof BigDecimal d) return d.doubleValue();
    if (v instanceof Double || v instanceof Float) return ((Number) v).doubleValue();
    if (v instanceof Character c) return c.toString();
    if (v instanceof Map<?, ?> m) {
      Map<Object, Object> out = new LinkedHashMap<>();
      m.forEach((k, val) -> out.put(fromJava(k), fromJava(val)));
      return out;
    }
    if (v instanceof Collection<?> c) {
      List<Object> out = new ArrayList<>(c.size());
      for (Object o : c) out.add(fromJava(o));
      return out;
    }
    if (v instanceof Object[] a) return fromJava(java.util.Arrays.asList(a));
    if (v instanceof JsonNode node) return fromJson(node);
    throw new TemplateException("unsupported template input type " + v.getClass().getSimpleName());
  }

  /** Jackson trees, as the HTTP layer may hand them over (tool schemas, arguments). */
  private static Object fromJson(JsonNode node) {
    if (node == null || node.isNull() || node.isMissingNode()) return null;
    if (node.isTextual()) return node.textValue();
    if (node.isBoolean()) return node.booleanValue();
    if (node.isIntegralNumber()) return fromJava(node.bigIntegerValue());
    if (node.isNumber()) return node.doubleValue();
    if (node.isArray()) {
      List<Object> out = new ArrayList<>(node.size());
      for (JsonNode item : node) out.add(fromJson(item));
      return out;
    }
    if (node.isObject()) {
      Map<Object, Object> out = new LinkedHashMap<>();
      node.fields().forEachRemaining(e -> out.put(e.getKey(), fromJson(e.getValue())));
      return out;
    }
    throw new TemplateException("unsupported JSON node " + node.getNodeType());
  }

  static boolean truthy(Object v) {
    if (v == null || v instanceof Undefined) return false;
    if (v instanceof Boolean b) return b;
    if (v instanceof Long l) return l != 0;
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
    if (v instanceof Long) return "int";
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
    return v instanceof Long || v instanceof Double || v instanceof Boolean;
  }

  /** Python int or bool as a long; floats are not ints. */
  static boolean isIntegral(Object v) {
    return v instanceof Long || v instanceof Boolean;
  }

  static long asLong(Object v) {
    if (v instanceof Long l) return l;
    if (v instanceof Boolean b) return b ? 1 : 0;
    throw new TemplateException("expected an integer but got " + typeName(v));
  }

  static double asDouble(Object v) {
    if (v instanceof Double d) return d;
    return asLong(v);
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

  /** Python iteration: lists, tuples, dict keys, string characters; Undefined is empty. */
  static List<Object> iterate(Object v) {
    List<Object> list = asList(v);
    if (list != null) return list;
    if (v instanceof Map<?, ?> m) return new ArrayList<>(m.keySet());
    if (v instanceof String s) {
      List<Object> chars = new ArrayList<>();
      s.codePoints().forEach(cp -> chars.add(new String(Character.toChars(cp))));
      return chars;
    }
    if (v instanceof Undefined) return List.of();
    throw new TemplateException("'" + typeName(v) + "' object is not iterable");
  }

  static long length(Object v) {
    if (v instanceof String s) return s.codePointCount(0, s.length());
    List<Object> list = asList(v);
    if (list != null) return list.size();
    if (v instanceof Map<?, ?> m) return m.size();
    if (v instanceof Undefined) return 0;
    throw new TemplateException("object of type '" + typeName(v) + "' has no len()");
  }

  // ---- equality and ordering

  static boolean equal(Object a, Object b) {
    if (a instanceof Undefined || b instanceof Undefined)
      return a instanceof Undefined && b instanceof Undefined;
    if (a == null || b == null) return a == b;
    if (isNumber(a) && isNumber(b)) {
      if (isIntegral(a) && isIntegral(b)) return asLong(a) == asLong(b);
      return asDouble(a) == asDouble(b);
    }
    if (a instanceof String && b instanceof String) return a.equals(b);
    List<Object> la = a instanceof List ? asList(a) : null;
    List<Object> lb = b instanceof List ? asList(b) : null;
    if (la != null && lb != null) return listEqual(la, lb);
    if (a instanceof Tuple ta && b instanceof Tuple tb) return listEqual(ta.items(), tb.items());
    if (a instanceof Map<?, ?> ma && b instanceof Map<?, ?> mb) {
      if (ma.size() != mb.size()) return false;
      for (Map.Entry<?, ?> e : ma.entrySet()) {
        if (!containsKey(mb, e.getKey()) || !equal(e.getValue(), get(mb, e.getKey()))) return false;
      }
      return true;
    }
    return a == b;
  }

  private static boolean listEqual(List<Object> a, List<Object> b) {
    if (a.size() != b.size()) return false;
    for (int i = 0; i < a.size(); i++) if (!equal(a.get(i), b.get(i))) return false;
    return true;
  }

  static int compare(Object a, Object b) {
    if (isNumber(a) && isNumber(b)) {
      if (isIntegral(a) && isIntegral(b)) return Long.compare(asLong(a), asLong(b));
      return Double.compare(asDouble(a), asDouble(b));
    }
    if (a instanceof String sa && b instanceof String sb) return compareCodePoints(sa, sb);
    List<Object> la = asList(a);
    List<Object> lb = asList(b);
    if (la != null && lb != null && a.getClass() == b.getClass()) {
      for (int i = 0; i < Math.min(la.size(), lb.size()); i++) {
        if (!equal(la.get(i), lb.get(i))) return compare(la.get(i), lb.get(i));
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
  static boolean contains(Object container, Object item) {
    if (container instanceof String s) {
      if (!(item instanceof String sub))
        throw new TemplateException(
            "'in <string>' requires string as left operand, not " + typeName(item));
      return s.contains(sub);
    }
    if (container instanceof Map<?, ?> m) return containsKey(m, item);
    for (Object o : iterate(container)) if (equal(o, item)) return true;
    return false;
  }

  /** Dict lookup with Python key equality (1 == 1.0 == True). */
  static boolean containsKey(Map<?, ?> m, Object key) {
    if (m.containsKey(key)) return true;
    if (isNumber(key)) for (Object k : m.keySet()) if (equal(k, key)) return true;
    return false;
  }

  static Object get(Map<?, ?> m, Object key) {
    if (m.containsKey(key)) return m.get(key);
    if (isNumber(key))
      for (Map.Entry<?, ?> e : m.entrySet()) if (equal(e.getKey(), key)) return e.getValue();
    return null;
  }

  // ---- str() and repr()

  /** Python {@code str(v)} as Jinja prints it ({@code {{ v }}}). */
  static String str(Object v) {
    if (v instanceof String s) return s;
    if (v instanceof Undefined) return "";
    return repr(v);
  }

  static String repr(Object v) {
    if (v == null) return "None";
    if (v instanceof Boolean b) return b ? "True" : "False";
    if (v instanceof Long l) return l.toString();
    if (v instanceof Double d) return floatRepr(d);
    if (v instanceof String s) return stringRepr(s);
    if (v instanceof Undefined) return "";
    if (v instanceof Tuple t) {
      StringBuilder sb = new StringBuilder("(");
      joinRepr(sb, t.items());
      if (t.items().size() == 1) sb.append(',');
      return sb.append(')').toString();
    }
    if (v instanceof List<?> l) {
      StringBuilder sb = new StringBuilder("[");
      joinRepr(sb, asList(l));
      return sb.append(']').toString();
    }
    if (v instanceof Map<?, ?> m) {
      StringBuilder sb = new StringBuilder("{");
      boolean first = true;
      for (Map.Entry<?, ?> e : m.entrySet()) {
        if (!first) sb.append(", ");
        first = false;
        sb.append(repr(e.getKey())).append(": ").append(repr(e.getValue()));
      }
      return sb.append('}').toString();
    }
    if (v instanceof Namespace) return "<Namespace>";
    if (v instanceof Loop) return "<LoopContext>";
    return "<function>";
  }

  private static void joinRepr(StringBuilder sb, List<Object> items) {
    for (int i = 0; i < items.size(); i++) {
      if (i > 0) sb.append(", ");
      sb.append(repr(items.get(i)));
    }
  }

  /** Python's {@code repr(str)}: single quotes unless the text has ' and no ". */
  static String stringRepr(String s) {
    char quote = s.indexOf('\'') >= 0 && s.indexOf('"') < 0 ? '"' : '\'';
    StringBuilder sb = new StringBuilder().append(quote);
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
    return sb.append(quote).toString();
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

  /** Python's {@code repr(float)}: shortest round-trip digits, exponent outside [1e-4, 1e16). */
  static String floatRepr(double d) {
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

  /** Python's {@code str.isspace} for one code point. */
  static boolean isPySpace(int cp) {
    return (cp >= 9 && cp <= 13)
        || (cp >= 0x1c && cp <= 0x1f)
        || cp == 0x85
        || Character.isSpaceChar(cp);
  }
}
