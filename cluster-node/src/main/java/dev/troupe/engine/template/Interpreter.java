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
 * {@code set} inside a loop does not leak out; templates use {@code namespace()} for that). A step
 * and an output budget stop runaway templates. One instance per render, not thread-safe.
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
  private final long maxSteps;
  private final int maxOutputChars;
  private long steps;
  private Scope root;

  Interpreter(Builtins builtins, long maxSteps, int maxOutputChars) {
    this.builtins = builtins;
    this.maxSteps = maxSteps;
    this.maxOutputChars = maxOutputChars;
  }

  String render(List<Stmt> body, Map<String, Object> variables) {
    Scope globals = new Scope(null);
    globals.vars.putAll(builtins.globals());
    root = new Scope(globals);
    variables.forEach((k, v) -> root.vars.put(k, Values.fromJava(v)));
    StringBuilder out = new StringBuilder();
    try {
      exec(body, root, out);
    } catch (LoopControl e) {
      throw new TemplateException("'break' or 'continue' outside a loop");
    } catch (StackOverflowError e) {
      throw new TemplateException("template recursion too deep");
    }
    return out.toString();
  }

  // ---- statements

  private void exec(List<Stmt> body, Scope scope, StringBuilder out) {
    for (Stmt stmt : body) exec(stmt, scope, out);
  }

  private void exec(Stmt stmt, Scope scope, StringBuilder out) {
    step();
    if (stmt instanceof Text t) {
      write(out, t.text());
    } else if (stmt instanceof Print p) {
      write(out, Values.str(eval(p.expr(), scope)));
    } else if (stmt instanceof If i) {
      for (int k = 0; k < i.conditions().size(); k++) {
        if (Values.truthy(eval(i.conditions().get(k), scope))) {
          exec(i.bodies().get(k), scope, out);
          return;
        }
      }
      exec(i.orElse(), scope, out);
    } else if (stmt instanceof For f) {
      execFor(f, scope, out);
    } else if (stmt instanceof Ast.Set s) {
      execSet(s, scope);
    } else if (stmt instanceof SetBlock s) {
      StringBuilder captured = new StringBuilder();
      exec(s.body(), scope, captured);
      scope.vars.put(s.target(), captured.toString());
    } else if (stmt instanceof Macro m) {
      scope.vars.put(m.name(), macro(m, scope));
    } else if (stmt instanceof FilterBlock f) {
      StringBuilder captured = new StringBuilder();
      exec(f.body(), scope, captured);
      List<Object> args = new ArrayList<>();
      for (Expr a : f.args()) args.add(eval(a, scope));
      write(out, Values.str(builtins.filter(f.filter(), captured.toString(), args, Map.of())));
    } else if (stmt instanceof Generation g) {
      exec(g.body(), scope, out);
    } else if (stmt instanceof Break) {
      throw new LoopControl(true);
    } else if (stmt instanceof Continue) {
      throw new LoopControl(false);
    }
  }

  private void execFor(For f, Scope scope, StringBuilder out) {
    Object iterable = eval(f.iterable(), scope);
    if (iterable == null) throw new TemplateException("'NoneType' object is not iterable");
    List<Object> items = new ArrayList<>(Values.iterate(iterable));
    if (f.filter() != null) {
      List<Object> kept = new ArrayList<>();
      for (Object item : items) {
        step();
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
      step(); // an empty body still costs: nested loops must hit the budget
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
    List<Object> parts = Values.iterate(value);
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
    step();
    if (expr instanceof Literal l) return l.value();
    if (expr instanceof Name n) return scope.get(n.name());
    if (expr instanceof ListExpr l) {
      List<Object> out = new ArrayList<>();
      for (Expr e : l.items()) out.add(eval(e, scope));
      return out;
    }
    if (expr instanceof TupleExpr t) {
      List<Object> out = new ArrayList<>();
      for (Expr e : t.items()) out.add(eval(e, scope));
      return new Tuple(out);
    }
    if (expr instanceof DictExpr d) {
      Map<Object, Object> out = new LinkedHashMap<>();
      for (int i = 0; i < d.keys().size(); i++)
        out.put(eval(d.keys().get(i), scope), eval(d.values().get(i), scope));
      return out;
    }
    if (expr instanceof GetAttr g) return builtins.getAttr(eval(g.object(), scope), g.name());
    if (expr instanceof GetItem g)
      return builtins.getItem(eval(g.object(), scope), eval(g.key(), scope));
    if (expr instanceof Slice s)
      return builtins.slice(
          eval(s.object(), scope),
          optional(s.start(), scope),
          optional(s.stop(), scope),
          optional(s.step(), scope));
    if (expr instanceof Call c) {
      Object callee = eval(c.callee(), scope);
      List<Object> args = new ArrayList<>();
      for (Expr a : c.args()) args.add(eval(a, scope));
      Map<String, Object> kwargs = new LinkedHashMap<>();
      c.kwargs().forEach((k, v) -> kwargs.put(k, eval(v, scope)));
      if (callee instanceof Undefined u) throw u.error();
      if (!(callee instanceof Callable fn))
        throw new TemplateException("'" + Values.typeName(callee) + "' object is not callable");
      return fn.call(args, kwargs);
    }
    if (expr instanceof Filter f) {
      Object value = eval(f.value(), scope);
      List<Object> args = new ArrayList<>();
      for (Expr a : f.args()) args.add(eval(a, scope));
      Map<String, Object> kwargs = new LinkedHashMap<>();
      f.kwargs().forEach((k, v) -> kwargs.put(k, eval(v, scope)));
      return builtins.filter(f.name(), value, args, kwargs);
    }
    if (expr instanceof Test t) {
      Object value = eval(t.value(), scope);
      List<Object> args = new ArrayList<>();
      for (Expr a : t.args()) args.add(eval(a, scope));
      return t.negated() != builtins.test(t.name(), value, args);
    }
    if (expr instanceof Unary u) {
      Object v = eval(u.operand(), scope);
      return switch (u.op()) {
        case "not" -> !Values.truthy(v);
        case "-" -> Operators.negate(v);
        default -> Operators.positive(v);
      };
    }
    if (expr instanceof Binary b) {
      if (b.op().equals("and")) {
        Object left = eval(b.left(), scope);
        return Values.truthy(left) ? eval(b.right(), scope) : left;
      }
      if (b.op().equals("or")) {
        Object left = eval(b.left(), scope);
        return Values.truthy(left) ? left : eval(b.right(), scope);
      }
      return Operators.binary(b.op(), eval(b.left(), scope), eval(b.right(), scope));
    }
    if (expr instanceof Compare c) {
      Object left = eval(c.first(), scope);
      for (int i = 0; i < c.ops().size(); i++) {
        Object right = eval(c.rest().get(i), scope);
        if (!Operators.compare(c.ops().get(i), left, right)) return false;
        left = right;
      }
      return true;
    }
    Cond c = (Cond) expr;
    if (Values.truthy(eval(c.condition(), scope))) return eval(c.then(), scope);
    return c.orElse() == null ? new Undefined("inline if") : eval(c.orElse(), scope);
  }

  private Object optional(Expr e, Scope scope) {
    return e == null ? null : eval(e, scope);
  }

  private void step() {
    if (++steps > maxSteps)
      throw new TemplateException("template exceeded its budget of " + maxSteps + " steps");
  }

  private void write(StringBuilder out, String s) {
    out.append(s);
    if (out.length() > maxOutputChars)
      throw new TemplateException("template output exceeded " + maxOutputChars + " characters");
  }
}
