package dev.troupe.engine.template;

import dev.troupe.engine.ChatTemplate.TemplateException;
import dev.troupe.engine.template.Values.Tuple;
import dev.troupe.engine.template.Values.Undefined;
import java.util.ArrayList;
import java.util.List;

/**
 * Python's arithmetic and comparison operators over template values. Every operator that builds a
 * string or a list asks the render's {@link Budget} for its size first.
 */
final class Operators {
  private Operators() {}

  static Object binary(String op, Object a, Object b, Budget budget) {
    if (op.equals("~")) return concat(Values.str(a, budget), Values.str(b, budget), budget);
    if (a instanceof Undefined u) throw u.error();
    if (b instanceof Undefined u) throw u.error();
    switch (op) {
      case "+" -> {
        if (a instanceof String sa && b instanceof String sb) return concat(sa, sb, budget);
        if (a instanceof List<?> && b instanceof List<?>)
          return concat(Values.asList(a), Values.asList(b), budget);
        if (a instanceof Tuple ta && b instanceof Tuple tb)
          return new Tuple(concat(ta.items(), tb.items(), budget));
        if (a instanceof String && Values.isNumber(b) || Values.isNumber(a) && b instanceof String)
          throw new TemplateException(
              a instanceof String
                  ? "can only concatenate str (not \"" + Values.typeName(b) + "\") to str"
                  : "unsupported operand type(s) for +: '"
                      + Values.typeName(a)
                      + "' and '"
                      + Values.typeName(b)
                      + "'");
      }
      case "*" -> {
        if (a instanceof String s && Values.isIntegral(b)) return repeat(s, b, budget);
        if (Values.isIntegral(a) && b instanceof String s) return repeat(s, a, budget);
        if (Values.asList(a) != null && Values.isIntegral(b)) return repeat(a, b, budget);
        if (Values.isIntegral(a) && Values.asList(b) != null) return repeat(b, a, budget);
      }
      case "%" -> {
        if (a instanceof String)
          throw new TemplateException("printf-style '%' formatting is not supported");
      }
      default -> {}
    }
    if (!Values.isNumber(a) || !Values.isNumber(b))
      throw new TemplateException(
          "unsupported operand type(s) for "
              + op
              + ": '"
              + Values.typeName(a)
              + "' and '"
              + Values.typeName(b)
              + "'");
    return Values.isIntegral(a) && Values.isIntegral(b)
        ? integers(op, a, b)
        : floats(op, Values.asDouble(a), Values.asDouble(b));
  }

  private static Object integers(String op, Object a, Object b) {
    return switch (op) {
      case "+" -> PyInt.add(a, b);
      case "-" -> PyInt.subtract(a, b);
      case "*" -> PyInt.multiply(a, b);
      case "/" -> PyInt.trueDivide(a, b);
      case "//" -> PyInt.floorDivide(a, b);
      case "%" -> PyInt.modulo(a, b);
      case "**" -> PyInt.power(a, b);
      default -> throw new TemplateException("unknown operator " + op);
    };
  }

  private static Object floats(String op, double x, double y) {
    switch (op) {
      case "+":
        return x + y;
      case "-":
        return x - y;
      case "*":
        return x * y;
      case "/":
        if (y == 0) throw new TemplateException("division by zero");
        return x / y;
      case "//":
        if (y == 0) throw new TemplateException("integer division or modulo by zero");
        return Math.floor(x / y);
      case "%":
        if (y == 0) throw new TemplateException("integer division or modulo by zero");
        double r = x % y;
        return (r != 0 && (r < 0) != (y < 0)) ? r + y : r;
      case "**":
        if (x == 0 && y < 0)
          throw new TemplateException("0.0 cannot be raised to a negative power");
        double p = Math.pow(x, y);
        if (Double.isInfinite(p) && !Double.isInfinite(x) && !Double.isInfinite(y))
          throw new TemplateException("(34, 'Numerical result out of range')");
        return p;
      default:
        throw new TemplateException("unknown operator " + op);
    }
  }

  private static String concat(String a, String b, Budget budget) {
    budget.chars((long) a.length() + b.length());
    return a + b;
  }

  private static List<Object> concat(List<Object> a, List<Object> b, Budget budget) {
    budget.items((long) a.size() + b.size());
    List<Object> out = new ArrayList<>(a.size() + b.size());
    out.addAll(a);
    out.addAll(b);
    return out;
  }

  /** {@code str * n}; a count beyond 64 bits is Python's OverflowError. */
  private static String repeat(String s, Object count, Budget budget) {
    long times = Values.asLong(count);
    if (times <= 0 || s.isEmpty()) return "";
    budget.chars(Math.multiplyHigh(s.length(), times) != 0 ? Long.MAX_VALUE : s.length() * times);
    return s.repeat((int) times);
  }

  /** {@code list * n} and {@code tuple * n}. */
  private static Object repeat(Object sequence, Object count, Budget budget) {
    List<Object> items = Values.asList(sequence);
    long times = Values.asLong(count);
    List<Object> out = new ArrayList<>();
    if (times > 0 && !items.isEmpty()) {
      budget.items(
          Math.multiplyHigh(items.size(), times) != 0 ? Long.MAX_VALUE : items.size() * times);
      for (long i = 0; i < times; i++) out.addAll(items);
    }
    return sequence instanceof Tuple ? new Tuple(out) : out;
  }

  static Object negate(Object v) {
    if (v instanceof Double d) return -d;
    if (Values.isIntegral(v)) return PyInt.negate(v);
    throw new TemplateException("bad operand type for unary -: '" + Values.typeName(v) + "'");
  }

  static Object positive(Object v) {
    if (v instanceof Double) return v;
    if (Values.isIntegral(v)) return PyInt.positive(v);
    throw new TemplateException("bad operand type for unary +: '" + Values.typeName(v) + "'");
  }

  static boolean compare(String op, Object a, Object b, Budget budget) {
    return switch (op) {
      case "==" -> Values.equal(a, b, budget);
      case "!=" -> !Values.equal(a, b, budget);
      case "<" -> Values.compare(a, b, budget) < 0;
      case ">" -> Values.compare(a, b, budget) > 0;
      case "<=" -> Values.compare(a, b, budget) <= 0;
      case ">=" -> Values.compare(a, b, budget) >= 0;
      case "in" -> Values.contains(b, a, budget);
      case "not in" -> !Values.contains(b, a, budget);
      default -> throw new TemplateException("unknown comparison " + op);
    };
  }
}
