package dev.troupe.engine.template;

import dev.troupe.engine.ChatTemplate.TemplateException;
import dev.troupe.engine.template.Ast.*;
import dev.troupe.engine.template.Values.Callable;
import dev.troupe.engine.template.Values.Namespace;
import dev.troupe.engine.template.Values.Tuple;
import dev.troupe.engine.template.Values.Undefined;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Evaluates a parsed template over one render's variables. Scoping follows Jinja2: {@code if}
 * shares its scope, every {@code for} iteration and macro call gets a fresh child scope (so a
 * {@code set} inside a loop does not leak out; templates use {@code namespace()} for that).
 *
 * <p>Every resource is bounded by the render's {@link Budget}: steps, nesting (each statement and
 * expression enters one level, so the Java stack a render needs is bounded), output, and the size
 * of every value built. Whatever goes wrong is a {@link TemplateException}: no exception or stack
 * overflow caused by a template escapes a render. One instance per render, not thread-safe.
 */
final class Interpreter {

  /** Raised to unwind a loop on {@code break}/{@code continue}. */
  private static final class LoopControl extends RuntimeException {
    final boolean isBreak;

    LoopControl(boolean isBreak) {
      super(null, null, false, false);
      this.isBreak = isBreak;
    }
  }

  /** A variable scope; lookups walk to the parent. */
  static final class Scope {
    final Scope parent;
    final Map<String, Object> vars = new HashMap<>();

    Scope(Scope parent) {
      this.parent = parent;
    }

    boolean has(String name) {
      for (Scope s = this; s != null; s = s.parent) if (s.vars.containsKey(name)) return true;
      return false;
    }

    Object get(String name) {
      for (Scope s = this; s != null; s = s.parent)
        if (s.vars.containsKey(name)) return s.vars.get(name);
      return new Undefined(name);
    }
  }

  private final Builtins builtins;
  private final Budget budget;
  private Scope root;

  Interpreter(Builtins builtins) {
    this.builtins = builtins;
    this.budget = builtins.budget;
  }

  String render(List<Stmt> body, Map<String, Object> variables) {
    Scope globals = new Scope(null);
    globals.vars.putAll(builtins.globals());
    root = new Scope(globals);
    StringBuilder out = new StringBuilder();
    try {
      variables.forEach((k, v) -> root.vars.put(k, Values.fromJava(v, budget)));
      exec(body, root, out);
    } catch (TemplateException e) {
      throw e;
    } catch (LoopControl e) {
      throw new TemplateException("'break' or 'continue' outside a loop");
    } catch (StackOverflowError e) {
      // Not expected (the nesting limit keeps the stack far smaller): a last line of defence.
      throw new TemplateException("template recursion too deep for this thread's stack");
    } catch (RuntimeException e) {
      // A case the interpreter does not handle itself is still the template's error, not the
      // node's: report it as one instead of letting it reach the caller's supervisor.
      throw new TemplateException("template failed: " + e, e);
    }
    return out.toString();
  }

  // ---- statements

  private void exec(List<Stmt> body, Scope scope, StringBuilder out) {
    for (Stmt stmt : body) exec(stmt, scope, out);
  }

  private void exec(Stmt stmt, Scope scope, StringBuilder out) {
    budget.step();
    budget.enter();
    try {
      execStatement(stmt, scope, out);
    } finally {
      budget.exit();
    }
  }

  /** Dispatches as {@link #evalExpression} does, keeping this recursion's frames small. */
  private void execStatement(Stmt stmt, Scope scope, StringBuilder out) {
    if (stmt instanceof Text) write(out, ((Text) stmt).text());
    else if (stmt instanceof Print)
      write(out, Values.str(eval(((Print) stmt).expr(), scope), budget));
    else if (stmt instanceof If) execIf((If) stmt, scope, out);
    else if (stmt instanceof For) execFor((For) stmt, scope, out);
    else if (stmt instanceof Ast.Set) execSet((Ast.Set) stmt, scope);
    else if (stmt instanceof SetBlock) execSetBlock((SetBlock) stmt, scope);
    else if (stmt instanceof Macro)
      scope.vars.put(((Macro) stmt).name(), macro((Macro) stmt, scope));
    else if (stmt instanceof FilterBlock) execFilterBlock((FilterBlock) stmt, scope, out);
    else if (stmt instanceof Generation) exec(((Generation) stmt).body(), scope, out);
    else if (stmt instanceof Break) throw new LoopControl(true);
    else if (stmt instanceof Continue) throw new LoopControl(false);
  }

  private void execIf(If i, Scope scope, StringBuilder out) {
    for (int k = 0; k < i.conditions().size(); k++) {
      if (Values.truthy(eval(i.conditions().get(k), scope))) {
        exec(i.bodies().get(k), scope, out);
        return;
      }
    }
    exec(i.orElse(), scope, out);
  }

  private void execSetBlock(SetBlock s, Scope scope) {
    StringBuilder captured = new StringBuilder();
    exec(s.body(), scope, captured);
    scope.vars.put(s.target(), captured.toString());
  }

  private void execFilterBlock(FilterBlock f, Scope scope, StringBuilder out) {
    StringBuilder captured = new StringBuilder();
    exec(f.body(), scope, captured);
    List<Object> args = evalArgs(f.args(), scope);
    write(
        out, Values.str(builtins.filter(f.filter(), captured.toString(), args, Map.of()), budget));
  }

  private void execFor(For f, Scope scope, StringBuilder out) {
    Object iterable = eval(f.iterable(), scope);
    if (iterable == null) throw new TemplateException("'NoneType' object is not iterable");
    List<Object> items = Values.iterate(iterable, budget);
    budget.items(items.size());
    items = new ArrayList<>(items);
    if (f.filter() != null) {
      List<Object> kept = new ArrayList<>();
      for (Object item : items) {
        budget.step();
        Scope s = new Scope(scope);
        bindTargets(f.targets(), item, s);
        if (Values.truthy(eval(f.filter(), s))) kept.add(item);
      }
      items = kept;
    }
    if (items.isEmpty()) {
      exec(f.orElse(), scope, out);
      return;
    }
    for (int i = 0; i < items.size(); i++) {
      budget.step(); // an empty body still costs: nested loops must hit the budget
      Scope s = new Scope(scope);
      bindTargets(f.targets(), items.get(i), s);
      s.vars.put("loop", new Values.Loop(items, i));
      try {
        exec(f.body(), s, out);
      } catch (LoopControl control) {
        if (control.isBreak) break;
      }
    }
  }

  private void bindTargets(List<String> targets, Object value, Scope scope) {
    if (targets.size() == 1) {
      scope.vars.put(targets.get(0), value);
      return;
    }
    List<Object> parts = Values.iterate(value, budget);
    if (parts.size() != targets.size())
      throw new TemplateException(
          "cannot unpack " + parts.size() + " values into " + targets.size() + " names");
    for (int i = 0; i < targets.size(); i++) scope.vars.put(targets.get(i), parts.get(i));
  }

  private void execSet(Ast.Set s, Scope scope) {
    Object value = eval(s.value(), scope);
    if (s.attr() != null) {
      Object target = scope.get(s.targets().get(0));
      if (!(target instanceof Namespace ns))
        throw new TemplateException(
            "cannot assign attribute on non-namespace object '" + s.targets().get(0) + "'");
      ns.attrs.put(s.attr(), value);
      return;
    }
    bindTargets(s.targets(), value, scope);
  }

  private Callable macro(Macro m, Scope definedIn) {
    return (args, kwargs) -> {
      if (args.size() > m.params().size())
        throw new TemplateException(
            "macro '" + m.name() + "' takes " + m.params().size() + " arguments");
      Scope s = new Scope(definedIn);
      for (int i = 0; i < m.params().size(); i++) {
        String p = m.params().get(i);
        if (i < args.size()) s.vars.put(p, args.get(i));
        else if (kwargs.containsKey(p)) s.vars.put(p, kwargs.get(p));
        else if (m.defaults().containsKey(p)) s.vars.put(p, eval(m.defaults().get(p), s));
        else s.vars.put(p, new Undefined(p));
      }
      for (String k : kwargs.keySet())
        if (!m.params().contains(k))
          throw new TemplateException("macro '" + m.name() + "' has no argument '" + k + "'");
      StringBuilder out = new StringBuilder();
      exec(m.body(), s, out);
      return out.toString();
    };
  }

  // ---- expressions

  Object eval(Expr expr, Scope scope) {
    budget.step();
    budget.enter();
    try {
      return evalExpression(expr, scope);
    } finally {
      budget.exit();
    }
  }

  /**
   * Dispatches on the node type without pattern bindings and delegates to one small method per
   * node: the frames of this recursion stay small, which is what lets the nesting limit keep a
   * render within a fraction of a default thread stack.
   */
  private Object evalExpression(Expr expr, Scope scope) {
    if (expr instanceof Literal) return ((Literal) expr).value();
    if (expr instanceof Name) return scope.get(((Name) expr).name());
    if (expr instanceof Binary) return evalBinary((Binary) expr, scope);
    if (expr instanceof Filter) return evalFilter((Filter) expr, scope);
    if (expr instanceof GetAttr) return evalGetAttr((GetAttr) expr, scope);
    if (expr instanceof GetItem) return evalGetItem((GetItem) expr, scope);
    if (expr instanceof Call) return evalCall((Call) expr, scope);
    if (expr instanceof Compare) return evalCompare((Compare) expr, scope);
    if (expr instanceof Unary) return evalUnary((Unary) expr, scope);
    if (expr instanceof Test) return evalTest((Test) expr, scope);
    if (expr instanceof Cond) return evalCond((Cond) expr, scope);
    if (expr instanceof Slice) return evalSlice((Slice) expr, scope);
    if (expr instanceof ListExpr) return evalItems(((ListExpr) expr).items(), scope);
    if (expr instanceof TupleExpr) return new Tuple(evalItems(((TupleExpr) expr).items(), scope));
    return evalDict((DictExpr) expr, scope);
  }

  private List<Object> evalItems(List<Expr> items, Scope scope) {
    budget.items(items.size());
    List<Object> out = new ArrayList<>(items.size());
    for (Expr e : items) out.add(eval(e, scope));
    return out;
  }

  private Object evalDict(DictExpr d, Scope scope) {
    budget.items(d.keys().size());
    Map<Object, Object> out = new LinkedHashMap<>();
    for (int i = 0; i < d.keys().size(); i++) {
      Object key = eval(d.keys().get(i), scope);
      if (!Values.hashable(key, budget))
        throw new TemplateException("unhashable type: '" + Values.typeName(key) + "'");
      out.put(key, eval(d.values().get(i), scope));
    }
    return out;
  }

  private Object evalGetAttr(GetAttr g, Scope scope) {
    return builtins.getAttr(eval(g.object(), scope), g.name());
  }

  private Object evalGetItem(GetItem g, Scope scope) {
    return builtins.getItem(eval(g.object(), scope), eval(g.key(), scope));
  }

  private Object evalSlice(Slice s, Scope scope) {
    return builtins.slice(
        eval(s.object(), scope),
        optional(s.start(), scope),
        optional(s.stop(), scope),
        optional(s.step(), scope));
  }

  private Object evalCall(Call c, Scope scope) {
    Object callee = eval(c.callee(), scope);
    List<Object> args = evalArgs(c.args(), scope);
    Map<String, Object> kwargs = evalKwargs(c.kwargs(), scope);
    if (callee instanceof Undefined u) throw u.error();
    if (!(callee instanceof Callable fn))
      throw new TemplateException("'" + Values.typeName(callee) + "' object is not callable");
    return fn.call(args, kwargs);
  }

  private Object evalFilter(Filter f, Scope scope) {
    Object value = eval(f.value(), scope);
    return builtins.filter(
        f.name(), value, evalArgs(f.args(), scope), evalKwargs(f.kwargs(), scope));
  }

  private Object evalTest(Test t, Scope scope) {
    Object value = eval(t.value(), scope);
    return t.negated() != builtins.test(t.name(), value, evalArgs(t.args(), scope));
  }

  private List<Object> evalArgs(List<Expr> args, Scope scope) {
    List<Object> out = new ArrayList<>(args.size());
    for (Expr a : args) out.add(eval(a, scope));
    return out;
  }

  private Map<String, Object> evalKwargs(Map<String, Expr> kwargs, Scope scope) {
    Map<String, Object> out = new LinkedHashMap<>();
    kwargs.forEach((k, v) -> out.put(k, eval(v, scope)));
    return out;
  }

  private Object evalUnary(Unary u, Scope scope) {
    Object v = eval(u.operand(), scope);
    return switch (u.op()) {
      case "not" -> !Values.truthy(v);
      case "-" -> Operators.negate(v);
      default -> Operators.positive(v);
    };
  }

  private Object evalBinary(Binary b, Scope scope) {
    Object left = eval(b.left(), scope);
    return switch (b.op()) {
      case "and" -> Values.truthy(left) ? eval(b.right(), scope) : left;
      case "or" -> Values.truthy(left) ? left : eval(b.right(), scope);
      default -> Operators.binary(b.op(), left, eval(b.right(), scope), budget);
    };
  }

  private Object evalCompare(Compare c, Scope scope) {
    Object left = eval(c.first(), scope);
    for (int i = 0; i < c.ops().size(); i++) {
      Object right = eval(c.rest().get(i), scope);
      if (!Operators.compare(c.ops().get(i), left, right, budget)) return false;
      left = right;
    }
    return true;
  }

  private Object evalCond(Cond c, Scope scope) {
    if (Values.truthy(eval(c.condition(), scope))) return eval(c.then(), scope);
    return c.orElse() == null ? new Undefined("inline if") : eval(c.orElse(), scope);
  }

  private Object optional(Expr e, Scope scope) {
    return e == null ? null : eval(e, scope);
  }

  /** Appends to the output (or a captured block), asking for the room first. */
  private void write(StringBuilder out, String s) {
    budget.output(out.length(), s.length());
    out.append(s);
  }
}
