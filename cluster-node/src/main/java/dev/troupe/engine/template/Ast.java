package dev.troupe.engine.template;

import java.util.List;
import java.util.Map;

/** The parsed template: statements ({@link Stmt}) and expressions ({@link Expr}). */
final class Ast {
  private Ast() {}

  sealed interface Stmt {}

  record Text(String text) implements Stmt {}

  record Print(Expr expr) implements Stmt {}

  record If(List<Expr> conditions, List<List<Stmt>> bodies, List<Stmt> orElse) implements Stmt {}

  record For(
      List<String> targets,
      Expr iterable,
      Expr filter,
      List<Stmt> body,
      List<Stmt> orElse,
      int line)
      implements Stmt {}

  /** {@code set name = value}, {@code set ns.attr = value} (attr != null) or tuple unpacking. */
  record Set(List<String> targets, String attr, Expr value) implements Stmt {}

  record SetBlock(String target, List<Stmt> body) implements Stmt {}

  record Macro(String name, List<String> params, Map<String, Expr> defaults, List<Stmt> body)
      implements Stmt {}

  record FilterBlock(String filter, List<Expr> args, List<Stmt> body) implements Stmt {}

  /** transformers' {@code {% generation %}} (assistant mask tracking): renders its body. */
  record Generation(List<Stmt> body) implements Stmt {}

  record Break() implements Stmt {}

  record Continue() implements Stmt {}

  sealed interface Expr {
    int line();
  }

  record Literal(Object value, int line) implements Expr {}

  record Name(String name, int line) implements Expr {}

  record ListExpr(List<Expr> items, int line) implements Expr {}

  record TupleExpr(List<Expr> items, int line) implements Expr {}

  record DictExpr(List<Expr> keys, List<Expr> values, int line) implements Expr {}

  record GetAttr(Expr object, String name, int line) implements Expr {}

  record GetItem(Expr object, Expr key, int line) implements Expr {}

  record Slice(Expr object, Expr start, Expr stop, Expr step, int line) implements Expr {}

  record Call(Expr callee, List<Expr> args, Map<String, Expr> kwargs, int line) implements Expr {}

  record Filter(Expr value, String name, List<Expr> args, Map<String, Expr> kwargs, int line)
      implements Expr {}

  record Test(Expr value, String name, List<Expr> args, boolean negated, int line)
      implements Expr {}

  record Unary(String op, Expr operand, int line) implements Expr {}

  record Binary(String op, Expr left, Expr right, int line) implements Expr {}

  record Compare(Expr first, List<String> ops, List<Expr> rest, int line) implements Expr {}

  record Cond(Expr condition, Expr then, Expr orElse, int line) implements Expr {}
}
