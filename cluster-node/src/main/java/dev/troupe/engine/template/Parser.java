package dev.troupe.engine.template;

import dev.troupe.engine.template.Ast.*;
import dev.troupe.engine.template.Lexer.Token;
import dev.troupe.engine.template.Lexer.Type;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Recursive-descent parser for the Jinja2 subset chat templates use: statements here, expressions
 * in {@link ExpressionParser}. Nesting is bounded (see there).
 */
final class Parser extends ExpressionParser {

  private Parser(List<Token> tokens, int maxDepth) {
    super(tokens, maxDepth);
  }

  static List<Stmt> parse(String source, int maxDepth) {
    Parser p = new Parser(Lexer.tokenize(source), maxDepth);
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

  private Stmt parseStatement() {
    enter();
    Stmt stmt = parseStatementBody();
    depth--;
    return stmt;
  }

  private Stmt parseStatementBody() {
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
}
