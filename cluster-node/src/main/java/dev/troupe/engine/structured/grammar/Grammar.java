package dev.troupe.engine.structured.grammar;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A context-free grammar over bytes: named rules whose bodies are {@link Expr}s, one of them the
 * root. Every front end builds one; {@link AutomatonCompiler} turns it into a byte-level pushdown
 * automaton. Tokenizer-independent and immutable.
 *
 * @param rules rule name → body, in definition order
 * @param root the rule the whole output must match
 */
public record Grammar(Map<String, Expr> rules, String root) {

  public Grammar {
    rules = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(rules));
    if (!rules.containsKey(root))
      throw new GrammarException("the root rule '" + root + "' is missing");
    for (var e : rules.entrySet()) checkRefs(e.getKey(), e.getValue(), rules);
  }

  /** A grammar of a single rule. */
  public static Grammar of(Expr root) {
    return new Grammar(Map.of("root", root), "root");
  }

  private static void checkRefs(String rule, Expr e, Map<String, Expr> rules) {
    if (e instanceof Expr.Ref r) {
      if (!rules.containsKey(r.rule()))
        throw new GrammarException(
            "rule '" + rule + "' refers to undefined rule '" + r.rule() + "'");
    } else if (e instanceof Expr.Seq s) {
      s.items().forEach(x -> checkRefs(rule, x, rules));
    } else if (e instanceof Expr.Alt a) {
      a.options().forEach(x -> checkRefs(rule, x, rules));
    } else if (e instanceof Expr.Repeat r) {
      checkRefs(rule, r.body(), rules);
    } else if (e instanceof Expr.TagDispatch t) {
      t.bodies().forEach(x -> checkRefs(rule, x, rules));
    }
  }

  /**
   * Copies every rule of {@code g} into {@code into} under fresh names starting with {@code prefix}
   * (references renamed accordingly) and returns a reference to its root.
   */
  public static Expr embed(Builder into, Grammar g, String prefix) {
    Map<String, String> names = new LinkedHashMap<>();
    for (String name : g.rules().keySet()) names.put(name, into.fresh(prefix + "_" + name));
    for (var e : g.rules().entrySet())
      into.rule(names.get(e.getKey()), rename(e.getValue(), names));
    return new Expr.Ref(names.get(g.root()));
  }

  private static Expr rename(Expr e, Map<String, String> names) {
    if (e instanceof Expr.Ref r) return new Expr.Ref(names.get(r.rule()));
    if (e instanceof Expr.Seq s)
      return new Expr.Seq(s.items().stream().map(x -> rename(x, names)).toList());
    if (e instanceof Expr.Alt a)
      return new Expr.Alt(a.options().stream().map(x -> rename(x, names)).toList());
    if (e instanceof Expr.Repeat r)
      return new Expr.Repeat(rename(r.body(), names), r.min(), r.max());
    if (e instanceof Expr.TagDispatch t)
      return new Expr.TagDispatch(
          t.triggers(), t.bodies().stream().map(x -> rename(x, names)).toList());
    return e;
  }

  /** Builds a grammar rule by rule; names are made unique on request. */
  public static final class Builder {
    private final Map<String, Expr> rules = new LinkedHashMap<>();

    /** Defines (or redefines) a rule. */
    public Builder rule(String name, Expr body) {
      rules.put(name, body);
      return this;
    }

    /** Reserves a fresh name starting with {@code hint} (its body to be set later). */
    public String fresh(String hint) {
      String name = hint;
      for (int i = 1; rules.containsKey(name); i++) name = hint + "_" + i;
      rules.put(name, new Expr.Empty());
      return name;
    }

    public boolean has(String name) {
      return rules.containsKey(name);
    }

    public List<String> names() {
      return new ArrayList<>(rules.keySet());
    }

    public Grammar build(String root) {
      return new Grammar(rules, root);
    }
  }
}
