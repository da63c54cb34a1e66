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

/** Recursive-descent parser for the Jinja2 subset chat templates use, with Jinja's precedence. */
final class Parser {
  private static final Set<String> COMPARE_OPS = Set.of("==", "!=", "<", ">", "<=", ">=");

  private final List<Token> tokens;
  private int pos;

  private Parser(List<Token> tokens) {
    this.tokens = tokens;
  }

  static List<Stmt> parse(String source) {
    Parser p = new Parser(Lexer.tokenize(source));
    List<Stmt> body = p.parseBody(Set.of());
    if (p.peek().type() != Type.EOF) throw p.error("unexpected tag '" + p.peekTagName() + "'");
    return body;
  }

  // ---- statements

  /** Parses until EOF or a block tag whose name is in {@code endTags} (left unconsumed). */
  private List<Stmt> parseBody(Set<String> endTags) {
    List<Stmt> body = new ArrayList<>();
    while (true) {
      Token t = peek();
      switch (t.type()) {
        case EOF -> {
          if (!endTags.isEmpty()) throw error("missing end tag, expected one of " + endTags);
          return body;
        }
        case TEXT -> {
          next();
          body.add(new Text(t.value()));
        }
        case VAR_BEGIN -> {
          next();
          Expr e = parseExpression();
          expect(Type.VAR_END);
          body.add(new Print(e));
        }
        case BLOCK_BEGIN -> {
          String name = peekTagName();
          if (endTags.contains(name)) return body;
          next();
          body.add(parseStatement());
        }
        default -> throw error("unexpected " + t.type());
      }
    }
  }

  private String peekTagName() {
    Token t = tokens.get(pos + 1 < tokens.size() ? pos + 1 : pos);
    return t.type() == Type.NAME ? t.value() : "";
  }

  private Stmt parseStatement() {
    Token t = expect(Type.NAME);
    return switch (t.value()) {
      case "if" -> parseIf();
      case "for" -> parseFor(t.line());
      case "set" -> parseSet();
      case "macro" -> parseMacro();
      case "filter" -> parseFilterBlock();
      case "generation" -> {
        expect(Type.BLOCK_END);
        List<Stmt> body = parseBody(Set.of("endgeneration"));
        endTag("endgeneration");
        yield new Generation(body);
      }
      case "break" -> {
        expect(Type.BLOCK_END);
        yield new Break();
      }
      case "continue" -> {
        expect(Type.BLOCK_END);
        yield new Continue();
      }
      default -> throw error("unknown or unsupported tag '" + t.value() + "'");
    };
  }

  private Stmt parseIf() {
    List<Expr> conditions = new ArrayList<>();
    List<List<Stmt>> bodies = new ArrayList<>();
    List<Stmt> orElse = List.of();
    conditions.add(parseExpression());
    expect(Type.BLOCK_END);
    while (true) {
      bodies.add(parseBody(Set.of("elif", "else", "endif")));
      expect(Type.BLOCK_BEGIN);
      String tag = expect(Type.NAME).value();
      if (tag.equals("elif")) {
        conditions.add(parseExpression());
        expect(Type.BLOCK_END);
      } else if (tag.equals("else")) {
        expect(Type.BLOCK_END);
        orElse = parseBody(Set.of("endif"));
        endTag("endif");
        break;
      } else {
        expect(Type.BLOCK_END);
        break;
      }
    }
    return new If(conditions, bodies, orElse);
  }

  private Stmt parseFor(int line) {
    List<String> targets = new ArrayList<>();
    boolean paren = acceptOp("(");
    do {
      targets.add(expect(Type.NAME).value());
    } while (acceptOp(","));
    if (paren) expectOp(")");
    if (!next().isName("in")) throw error("expected 'in' in for loop");
    Expr iterable = parseTernaryFree();
    Expr filter = null;
    if (peek().isName("if")) {
      next();
      filter = parseTernaryFree();
    }
    if (peek().isName("recursive")) throw error("recursive loops are not supported");
    expect(Type.BLOCK_END);
    List<Stmt> body = parseBody(Set.of("else", "endfor"));
    List<Stmt> orElse = List.of();
    expect(Type.BLOCK_BEGIN);
    String tag = expect(Type.NAME).value();
    expect(Type.BLOCK_END);
    if (tag.equals("else")) {
      orElse = parseBody(Set.of("endfor"));
      endTag("endfor");
    }
    return new For(targets, iterable, filter, body, orElse, line);
  }

  private Stmt parseSet() {
    String first = expect(Type.NAME).value();
    if (acceptOp(".")) {
      String attr = expect(Type.NAME).value();
      expectOp("=");
      Expr value = parseExpression();
      expect(Type.BLOCK_END);
      return new Ast.Set(List.of(first), attr, value);
    }
    List<String> targets = new ArrayList<>(List.of(first));
    while (acceptOp(",")) targets.add(expect(Type.NAME).value());
    if (peek().type() == Type.BLOCK_END && targets.size() == 1) {
      next();
      List<Stmt> body = parseBody(Set.of("endset"));
      endTag("endset");
      return new SetBlock(first, body);
    }
    expectOp("=");
    Expr value = parseTupleOrExpression();
    expect(Type.BLOCK_END);
    return new Ast.Set(targets, null, value);
  }

  private Stmt parseMacro() {
    String name = expect(Type.NAME).value();
    expectOp("(");
    List<String> params = new ArrayList<>();
    Map<String, Expr> defaults = new LinkedHashMap<>();
    if (!acceptOp(")")) {
      do {
        String param = expect(Type.NAME).value();
        params.add(param);
        if (acceptOp("=")) defaults.put(param, parseExpression());
      } while (acceptOp(","));
      expectOp(")");
    }
    expect(Type.BLOCK_END);
    List<Stmt> body = parseBody(Set.of("endmacro"));
    endTag("endmacro");
    return new Macro(name, params, defaults, body);
  }

  private Stmt parseFilterBlock() {
    String filter = expect(Type.NAME).value();
    List<Expr> args = new ArrayList<>();
    if (acceptOp("(")) {
      if (!acceptOp(")")) {
        do args.add(parseExpression());
        while (acceptOp(","));
        expectOp(")");
      }
    }
    expect(Type.BLOCK_END);
    List<Stmt> body = parseBody(Set.of("endfilter"));
    endTag("endfilter");
    return new FilterBlock(filter, args, body);
  }

  private void endTag(String name) {
    expect(Type.BLOCK_BEGIN);
    Token t = expect(Type.NAME);
    if (!t.value().equals(name)) throw error("expected " + name + " but found " + t.value());
    expect(Type.BLOCK_END);
  }

  // ---- expressions (precedence as Jinja2's parser)

  /** An expression, or a bare tuple {@code a, b} (set statements). */
  private Expr parseTupleOrExpression() {
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
  private Expr parseTernaryFree() {
    return parseOr();
  }

  private Expr parseOr() {
    Expr left = parseAnd();
    while (peek().isName("or")) {
      int line = next().line();
      left = new Binary("or", left, parseAnd(), line);
    }
    return left;
  }

  private Expr parseAnd() {
    Expr left = parseNot();
    while (peek().isName("and")) {
      int line = next().line();
      left = new Binary("and", left, parseNot(), line);
    }
    return left;
  }

  private Expr parseNot() {
    if (peek().isName("not")) {
      int line = next().line();
      return new Unary("not", parseNot(), line);
    }
    return parseCompare();
  }

  private Expr parseCompare() {
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

  private Expr parseMath1() {
    Expr left = parseConcat();
    while (peek().isOp("+") || peek().isOp("-")) {
      Token op = next();
      left = new Binary(op.value(), left, parseConcat(), op.line());
    }
    return left;
  }

  private Expr parseConcat() {
    Expr left = parseMath2();
    while (peek().isOp("~")) {
      Token op = next();
      left = new Binary("~", left, parseMath2(), op.line());
    }
    return left;
  }

  private Expr parseMath2() {
    Expr left = parsePow();
    while (peek().isOp("*") || peek().isOp("/") || peek().isOp("//") || peek().isOp("%")) {
      Token op = next();
      left = new Binary(op.value(), left, parsePow(), op.line());
    }
    return left;
  }

  private Expr parsePow() {
    Expr left = parseUnary(true);
    while (peek().isOp("**")) {
      Token op = next();
      left = new Binary("**", left, parseUnary(true), op.line());
    }
    return left;
  }

  private Expr parseUnary(boolean withFilter) {
    Token t = peek();
    Expr node;
    if (t.isOp("-") || t.isOp("+")) {
      next();
      node = new Unary(t.value(), parseUnary(false), t.line());
    } else {
      node = parsePrimary();
    }
    node = parsePostfix(node);
    if (withFilter) node = parseFilterExpr(node);
    return node;
  }

  private Expr parsePrimary() {
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
        return new Literal(Long.parseLong(t.value()), t.line());
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

  private Expr parsePostfix(Expr node) {
    while (true) {
      Token t = peek();
      if (t.isOp(".")) {
        next();
        Token name = next();
        if (name.type() == Type.NAME) node = new GetAttr(node, name.value(), t.line());
        else if (name.type() == Type.INT)
          node = new GetItem(node, new Literal(Long.parseLong(name.value()), t.line()), t.line());
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

  private Expr parseSubscript(Expr node, int line) {
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

  private Expr parseCall(Expr callee) {
    int line = expectOp("(").line();
    List<Expr> args = new ArrayList<>();
    Map<String, Expr> kwargs = new LinkedHashMap<>();
    parseArgs(args, kwargs);
    return new Call(callee, args, kwargs, line);
  }

  /** After an opening parenthesis: positional and keyword arguments up to {@code )}. */
  private void parseArgs(List<Expr> args, Map<String, Expr> kwargs) {
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

  private Expr parseFilterExpr(Expr node) {
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

  private String dottedName() {
    StringBuilder name = new StringBuilder(expect(Type.NAME).value());
    while (peek().isOp(".") && tokens.get(pos + 1).type() == Type.NAME) {
      next();
      name.append('.').append(next().value());
    }
    return name.toString();
  }

  // ---- token helpers

  private Token peek() {
    return tokens.get(pos);
  }

  private Token next() {
    Token t = tokens.get(pos);
    if (t.type() != Type.EOF) pos++;
    return t;
  }

  private Token expect(Type type) {
    Token t = next();
    if (t.type() != type) throw error("expected " + type + " but found " + describe(t));
    return t;
  }

  private Token expectOp(String op) {
    Token t = next();
    if (!t.isOp(op)) throw error("expected '" + op + "' but found " + describe(t));
    return t;
  }

  private boolean acceptOp(String op) {
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

  private TemplateException error(String message) {
    return new TemplateException("template syntax error at line " + peek().line() + ": " + message);
  }
}
