package dev.troupe.engine.template;

import dev.troupe.engine.ChatTemplate.TemplateException;
import dev.troupe.engine.template.Values.Tuple;
import dev.troupe.engine.template.Values.Undefined;
import java.util.ArrayList;
import java.util.List;

/** Python's arithmetic and comparison operators over template values. */
final class Operators {
  private Operators() {}

  /** Largest string or list a template may build with {@code *} (same as the output budget). */
  private static final long MAX_REPEAT = JinjaTemplate.DEFAULT_MAX_OUTPUT_CHARS;

  static Object binary(String op, Object a, Object b) {
    if (op.equals("~")) return Values.str(a) + Values.str(b);
    if (a instanceof Undefined u) throw u.error();
    if (b instanceof Undefined u) throw u.error();
    switch (op) {
      case "+" -> {
        if (a instanceof String sa && b instanceof String sb) return sa + sb;
        if (a instanceof List<?> && b instanceof List<?>) {
          List<Object> out = new ArrayList<>(Values.asList(a));
          out.addAll(Values.asList(b));
          return out;
        }
        if (a instanceof Tuple ta && b instanceof Tuple tb) {
          List<Object> out = new ArrayList<>(ta.items());
          out.addAll(tb.items());
          return new Tuple(out);
        }
      }
      case "*" -> {
        if (a instanceof String s && Values.isIntegral(b)) return repeat(s, Values.asLong(b));
        if (Values.isIntegral(a) && b instanceof String s) return repeat(s, Values.asLong(a));
        if (a instanceof List<?> && Values.isIntegral(b)) {
          if ((double) Values.asList(a).size() * Values.asLong(b) > MAX_REPEAT)
            throw new TemplateException("list repetition too large");
          List<Object> out = new ArrayList<>();
          for (long i = 0; i < Values.asLong(b); i++) out.addAll(Values.asList(a));
          return out;
        }
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
    boolean ints = Values.isIntegral(a) && Values.isIntegral(b);
    switch (op) {
      case "+":
        return ints
            ? (Object) Math.addExact(Values.asLong(a), Values.asLong(b))
            : Values.asDouble(a) + Values.asDouble(b);
      case "-":
        return ints
            ? (Object) Math.subtractExact(Values.asLong(a), Values.asLong(b))
            : Values.asDouble(a) - Values.asDouble(b);
      case "*":
        return ints
            ? (Object) Math.multiplyExact(Values.asLong(a), Values.asLong(b))
            : Values.asDouble(a) * Values.asDouble(b);
      case "/":
        if (Values.asDouble(b) == 0) throw new TemplateException("division by zero");
        return Values.asDouble(a) / Values.asDouble(b);
      case "//":
        if (Values.asDouble(b) == 0)
          throw new TemplateException("integer division or modulo by zero");
        return ints
            ? (Object) Math.floorDiv(Values.asLong(a), Values.asLong(b))
            : Math.floor(Values.asDouble(a) / Values.asDouble(b));
      case "%":
        if (Values.asDouble(b) == 0)
          throw new TemplateException("integer division or modulo by zero");
        if (ints) return Math.floorMod(Values.asLong(a), Values.asLong(b));
        double x = Values.asDouble(a);
        double y = Values.asDouble(b);
        double r = x % y;
        return (r != 0 && (r < 0) != (y < 0)) ? r + y : r;
      case "**":
        if (ints && Values.asLong(b) >= 0) {
          long result = 1;
          for (long i = 0; i < Values.asLong(b); i++)
            result = Math.multiplyExact(result, Values.asLong(a));
          return result;
        }
        return Math.pow(Values.asDouble(a), Values.asDouble(b));
      default:
        throw new TemplateException("unknown operator " + op);
    }
  }

  private static String repeat(String s, long times) {
    if (times <= 0) return "";
    if ((double) s.length() * times > MAX_REPEAT)
      throw new TemplateException("string repetition too large");
    return s.repeat((int) times);
  }

  static Object negate(Object v) {
    if (v instanceof Double d) return -d;
    if (Values.isIntegral(v)) return -Values.asLong(v);
    throw new TemplateException("bad operand type for unary -: '" + Values.typeName(v) + "'");
  }

  static Object positive(Object v) {
    if (v instanceof Double) return v;
    if (Values.isIntegral(v)) return Values.asLong(v);
    throw new TemplateException("bad operand type for unary +: '" + Values.typeName(v) + "'");
  }

  static boolean compare(String op, Object a, Object b) {
    return switch (op) {
      case "==" -> Values.equal(a, b);
      case "!=" -> !Values.equal(a, b);
      case "<" -> Values.compare(a, b) < 0;
      case ">" -> Values.compare(a, b) > 0;
      case "<=" -> Values.compare(a, b) <= 0;
      case ">=" -> Values.compare(a, b) >= 0;
      case "in" -> Values.contains(b, a);
      case "not in" -> !Values.contains(b, a);
      default -> throw new TemplateException("unknown comparison " + op);
    };
  }
}
