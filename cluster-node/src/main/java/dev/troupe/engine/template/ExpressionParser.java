package dev.troupe.engine.template;

import dev.troupe.engine.ChatTemplate.TemplateException;
import dev.troupe.engine.template.Ast.*;
import dev.troupe.engine.template.Lexer.Token;
import dev.troupe.engine.template.Lexer.Type;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The expression half of the template parser (recursive descent with Jinja2's precedence) and the
 * token cursor both halves share. Its recursion (brackets, prefix operators, and the blocks {@link
 * Parser} nests) is bounded by a nesting limit, so no template can overflow the stack.
 */
abstract class ExpressionParser {
  private static final Set<String> COMPARE_OPS = Set.of("==", "!=", "<", ">", "<=", ">=");

  final List<Token> tokens;
  private final int maxDepth;
  int depth;
  int pos;

  ExpressionParser(List<Token> tokens, int maxDepth) {
    this.tokens = tokens;
    this.maxDepth = maxDepth;
  }

  String peekTagName() {
    Token t = tokens.get(pos + 1 < tokens.size() ? pos + 1 : pos);
    return t.type() == Type.NAME ? t.value() : "";
  }

  /** One more level of nesting; {@code depth--} when it is parsed. */
  void enter() {
    if (++depth > maxDepth) throw error("nesting deeper than " + maxDepth + " levels");
  }

  // ---- expressions (precedence as Jinja2's parser)

  /** An expression, or a bare tuple {@code a, b} (set statements). */
  Expr parseTupleOrExpression() {
    int line = peek().line();
    Expr first = parseExpression();
    if (!peek().isOp(",")) return first;
    List<Expr> items = new ArrayList<>(List.of(first));
    while (acceptOp(",")) {
      if (peek().type() == Type.BLOCK_END) break;
      items.add(parseExpression());
    }
    return new TupleExpr(items, line);
  }

  Expr parseExpression() {
    enter();
    Expr e = parseConditional();
    depth--;
    return e;
  }

  Expr parseConditional() {
    Expr e = parseOr();
    if (peek().isName("if")) {
      int line = next().line();
      Expr cond = parseOr();
      Expr orElse = null;
      if (peek().isName("else")) {
        next();
        orElse = parseExpression();
      }
      return new Cond(cond, e, orElse, line);
    }
    return e;
  }

  /** For loop iterables and filters: no inline {@code if} (it is the loop filter). */
  Expr parseTernaryFree() {
    return parseOr();
  }

  Expr parseOr() {
    Expr left = parseAnd();
    while (peek().isName("or")) {
      int line = next().line();
      left = new Binary("or", left, parseAnd(), line);
    }
    return left;
  }

  Expr parseAnd() {
    Expr left = parseNot();
    while (peek().isName("and")) {
      int line = next().line();
      left = new Binary("and", left, parseNot(), line);
    }
    return left;
  }

  Expr parseNot() {
    if (peek().isName("not")) {
      int line = next().line();
      enter();
      Expr operand = parseNot();
      depth--;
      return new Unary("not", operand, line);
    }
    return parseCompare();
  }

  Expr parseCompare() {
    int line = peek().line();
    Expr first = parseMath1();
    List<String> ops = new ArrayList<>();
    List<Expr> rest = new ArrayList<>();
    while (true) {
      Token t = peek();
      if (t.type() == Type.OP && COMPARE_OPS.contains(t.value())) {
        next();
        ops.add(t.value());
      } else if (t.isName("in")) {
        next();
        ops.add("in");
      } else if (t.isName("not") && tokens.get(pos + 1).isName("in")) {
        next();
        next();
        ops.add("not in");
      } else {
        break;
      }
      rest.add(parseMath1());
    }
    return ops.isEmpty() ? first : new Compare(first, ops, rest, line);
  }

  Expr parseMath1() {
    Expr left = parseConcat();
    while (peek().isOp("+") || peek().isOp("-")) {
      Token op = next();
      left = new Binary(op.value(), left, parseConcat(), op.line());
    }
    return left;
  }

  Expr parseConcat() {
    Expr left = parseMath2();
    while (peek().isOp("~")) {
      Token op = next();
      left = new Binary("~", left, parseMath2(), op.line());
    }
    return left;
  }

  Expr parseMath2() {
    Expr left = parsePow();
    while (peek().isOp("*") || peek().isOp("/") || peek().isOp("//") || peek().isOp("%")) {
      Token op = next();
      left = new Binary(op.value(), left, parsePow(), op.line());
    }
    return left;
  }

  Expr parsePow() {
    Expr left = parseUnary(true);
    while (peek().isOp("**")) {
      Token op = next();
      left = new Binary("**", left, parseUnary(true), op.line());
    }
    return left;
  }

  Expr parseUnary(boolean withFilter) {
    Token t = peek();
    Expr node;
    if (t.isOp("-") || t.isOp("+")) {
      next();
      enter();
      node = new Unary(t.value(), parseUnary(false), t.line());
      depth--;
    } else {
      node = parsePrimary();
    }
    node = parsePostfix(node);
    if (withFilter) node = parseFilterExpr(node);
    return node;
  }

  Expr parsePrimary() {
    Token t = next();
    switch (t.type()) {
      case NAME -> {
        return switch (t.value()) {
          case "true", "True" -> new Literal(Boolean.TRUE, t.line());
          case "false", "False" -> new Literal(Boolean.FALSE, t.line());
          case "none", "None" -> new Literal(null, t.line());
          default -> new Name(t.value(), t.line());
        };
      }
      case STRING -> {
        StringBuilder sb = new StringBuilder(t.value());
        while (peek().type() == Type.STRING) sb.append(next().value()); // implicit concatenation
        return new Literal(sb.toString(), t.line());
      }
      case INT -> {
        return new Literal(PyInt.parse(t.value()), t.line());
      }
      case FLOAT -> {
        return new Literal(Double.parseDouble(t.value()), t.line());
      }
      case OP -> {
        switch (t.value()) {
          case "(" -> {
            if (acceptOp(")")) return new TupleExpr(List.of(), t.line());
            Expr first = parseExpression();
            if (acceptOp(")")) return first;
            List<Expr> items = new ArrayList<>(List.of(first));
            while (acceptOp(",")) {
              if (peek().isOp(")")) break;
              items.add(parseExpression());
            }
            expectOp(")");
            return new TupleExpr(items, t.line());
          }
          case "[" -> {
            List<Expr> items = new ArrayList<>();
            while (!acceptOp("]")) {
              if (!items.isEmpty()) expectOp(",");
              if (acceptOp("]")) break;
              items.add(parseExpression());
            }
            return new ListExpr(items, t.line());
          }
          case "{" -> {
            List<Expr> keys = new ArrayList<>();
            List<Expr> values = new ArrayList<>();
            while (!acceptOp("}")) {
              if (!keys.isEmpty()) expectOp(",");
              if (acceptOp("}")) break;
              keys.add(parseExpression());
              expectOp(":");
              values.add(parseExpression());
            }
            return new DictExpr(keys, values, t.line());
          }
          default -> throw error("unexpected '" + t.value() + "'");
        }
      }
      default -> throw error("unexpected " + describe(t));
    }
  }

  Expr parsePostfix(Expr node) {
    while (true) {
      Token t = peek();
      if (t.isOp(".")) {
        next();
        Token name = next();
        if (name.type() == Type.NAME) node = new GetAttr(node, name.value(), t.line());
        else if (name.type() == Type.INT)
          node = new GetItem(node, new Literal(PyInt.parse(name.value()), t.line()), t.line());
        else throw error("expected attribute name");
      } else if (t.isOp("[")) {
        next();
        node = parseSubscript(node, t.line());
      } else if (t.isOp("(")) {
        node = parseCall(node);
      } else {
        return node;
      }
    }
  }

  Expr parseSubscript(Expr node, int line) {
    Expr start = null;
    Expr stop = null;
    Expr step = null;
    if (!peek().isOp(":")) {
      start = parseExpression();
      if (acceptOp("]")) return new GetItem(node, start, line);
    }
    expectOp(":");
    if (!peek().isOp("]") && !peek().isOp(":")) stop = parseExpression();
    if (acceptOp(":") && !peek().isOp("]")) step = parseExpression();
    expectOp("]");
    return new Slice(node, start, stop, step, line);
  }

  Expr parseCall(Expr callee) {
    int line = expectOp("(").line();
    List<Expr> args = new ArrayList<>();
    Map<String, Expr> kwargs = new LinkedHashMap<>();
    parseArgs(args, kwargs);
    return new Call(callee, args, kwargs, line);
  }

  /** After an opening parenthesis: positional and keyword arguments up to {@code )}. */
  void parseArgs(List<Expr> args, Map<String, Expr> kwargs) {
    while (!acceptOp(")")) {
      if (!args.isEmpty() || !kwargs.isEmpty()) {
        expectOp(",");
        if (acceptOp(")")) return;
      }
      if (peek().type() == Type.NAME && tokens.get(pos + 1).isOp("=")) {
        String key = next().value();
        next();
        kwargs.put(key, parseExpression());
      } else {
        if (!kwargs.isEmpty()) throw error("positional argument after keyword argument");
        args.add(parseExpression());
      }
    }
  }

  Expr parseFilterExpr(Expr node) {
    while (true) {
      Token t = peek();
      if (t.isOp("|")) {
        next();
        String name = dottedName();
        List<Expr> args = new ArrayList<>();
        Map<String, Expr> kwargs = new LinkedHashMap<>();
        if (acceptOp("(")) parseArgs(args, kwargs);
        node = new Filter(node, name, args, kwargs, t.line());
      } else if (t.isName("is")) {
        next();
        boolean negated = false;
        if (peek().isName("not")) {
          next();
          negated = true;
        }
        String name = dottedName();
        List<Expr> args = new ArrayList<>();
        if (peek().isOp("(")) {
          next();
          Map<String, Expr> kwargs = new LinkedHashMap<>();
          parseArgs(args, kwargs);
          if (!kwargs.isEmpty()) throw error("keyword arguments to tests are not supported");
        } else if (startsTestArgument(peek())) {
          // Jinja allows one bare argument: `x is divisibleby 3`, `x is equalto y`
          args.add(parsePostfix(parsePrimary()));
        }
        node = new Test(node, name, args, negated, t.line());
      } else if (t.isOp("(")) {
        node = parseCall(node);
      } else {
        return node;
      }
    }
  }

  private static boolean startsTestArgument(Token t) {
    return switch (t.type()) {
      case STRING, INT, FLOAT -> true;
      case NAME -> !Set.of("else", "or", "and", "is", "in", "if", "not").contains(t.value());
      case OP -> t.value().equals("[") || t.value().equals("{") || t.value().equals("-");
      default -> false;
    };
  }

  String dottedName() {
    StringBuilder name = new StringBuilder(expect(Type.NAME).value());
    while (peek().isOp(".") && tokens.get(pos + 1).type() == Type.NAME) {
      next();
      name.append('.').append(next().value());
    }
    return name.toString();
  }

  // ---- token helpers

  Token peek() {
    return tokens.get(pos);
  }

  Token next() {
    Token t = tokens.get(pos);
    if (t.type() != Type.EOF) pos++;
    return t;
  }

  Token expect(Type type) {
    Token t = next();
    if (t.type() != type) throw error("expected " + type + " but found " + describe(t));
    return t;
  }

  Token expectOp(String op) {
    Token t = next();
    if (!t.isOp(op)) throw error("expected '" + op + "' but found " + describe(t));
    return t;
  }

  boolean acceptOp(String op) {
    if (peek().isOp(op)) {
      next();
      return true;
    }
    return false;
  }

  private static String describe(Token t) {
    return switch (t.type()) {
      case NAME, OP, INT, FLOAT -> "'" + t.value() + "'";
      case STRING -> "string";
      default -> t.type().toString().toLowerCase();
    };
  }

  TemplateException error(String message) {
    return new TemplateException("template syntax error at line " + peek().line() + ": " + message);
  }
}
