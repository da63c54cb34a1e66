package dev.troupe.engine.structured.grammar;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * {@link Grammar} → {@link Automaton}: one Thompson NFA per rule, byte equivalence classes over the
 * whole grammar, subset construction per rule, then the whole-grammar checks: rules that can never
 * complete are dropped (an error if that is the root), dead and unreachable states are trimmed,
 * left recursion is refused (the pushdown closure would not terminate), and the FOLLOW byte sets of
 * rules are computed for the token-mask precomputation.
 */
public final class AutomatonCompiler {

  private AutomatonCompiler() {}

  public static Automaton compile(Grammar grammar, Limits limits) {
    // rules reachable from the root, root first
    List<String> names = reachableRules(grammar);
    Map<String, Integer> index = new HashMap<>();
    for (int i = 0; i < names.size(); i++) index.put(names.get(i), i);
    int r = names.size();

    Nfa[] nfas = new Nfa[r];
    int nfaBudget = limits.maxNfaStates();
    for (int i = 0; i < r; i++) {
      nfas[i] = Nfa.build(names.get(i), grammar.rules().get(names.get(i)), index, nfaBudget);
      nfaBudget -= nfas[i].states;
      if (nfaBudget <= 0)
        throw new GrammarException.TooLarge(
            "the automaton exceeds " + limits.maxNfaStates() + " NFA states");
    }

    int[] classOf = byteClasses(nfas);
    int numClasses = 0;
    for (int c : classOf) numClasses = Math.max(numClasses, c + 1);

    RuleDfa[] dfas = new RuleDfa[r];
    int budget = limits.maxStates();
    for (int i = 0; i < r; i++) {
      dfas[i] = RuleDfa.of(nfas[i], classOf, numClasses, budget, names.get(i));
      budget -= dfas[i].size;
      nfas[i] = null;
    }
    return link(names, dfas, classOf, numClasses);
  }

  private static List<String> reachableRules(Grammar grammar) {
    LinkedHashMap<String, Boolean> seen = new LinkedHashMap<>();
    ArrayDeque<String> queue = new ArrayDeque<>();
    seen.put(grammar.root(), true);
    queue.add(grammar.root());
    while (!queue.isEmpty()) {
      String name = queue.poll();
      collectRefs(
          grammar.rules().get(name),
          ref -> {
            if (seen.putIfAbsent(ref, true) == null) queue.add(ref);
          });
    }
    return new ArrayList<>(seen.keySet());
  }

  private static void collectRefs(Expr e, java.util.function.Consumer<String> sink) {
    if (e instanceof Expr.Ref ref) sink.accept(ref.rule());
    else if (e instanceof Expr.Seq s) s.items().forEach(x -> collectRefs(x, sink));
    else if (e instanceof Expr.Alt a) a.options().forEach(x -> collectRefs(x, sink));
    else if (e instanceof Expr.Repeat rep) collectRefs(rep.body(), sink);
    else if (e instanceof Expr.TagDispatch d) d.bodies().forEach(x -> collectRefs(x, sink));
  }

  /** Bytes are equivalent when every byte edge of every rule contains both or neither. */
  private static int[] byteClasses(Nfa[] nfas) {
    long[] sig = new long[256];
    long[] sig2 = new long[256];
    long k = 0;
    for (Nfa nfa : nfas) {
      for (int e = 0; e < nfa.byteEdgeCount; e++) {
        int lo = nfa.byteEdges[e * 4 + 1];
        int hi = nfa.byteEdges[e * 4 + 2];
        if (lo == 0 && hi == 255) continue;
        // two independent hashes of the membership signature
        long h1 = mix(++k);
        long h2 = mix(k * 0x9E3779B97F4A7C15L);
        for (int b = lo; b <= hi; b++) {
          sig[b] += h1;
          sig2[b] ^= h2;
        }
      }
    }
    Map<List<Long>, Integer> ids = new HashMap<>();
    int[] classOf = new int[256];
    for (int b = 0; b < 256; b++) {
      List<Long> key = List.of(sig[b], sig2[b]);
      Integer id = ids.get(key);
      if (id == null) {
        id = ids.size();
        ids.put(key, id);
      }
      classOf[b] = id;
    }
    return classOf;
  }

  private static long mix(long z) {
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }

  /** Productivity, trimming, renumbering, left recursion and FOLLOW sets. */
  private static Automaton link(List<String> names, RuleDfa[] dfas, int[] classOf, int nc) {
    int r = dfas.length;
    // live[i][s]: state s of rule i can reach acceptance (through productive callees)
    boolean[] productive = new boolean[r];
    boolean[][] live = new boolean[r][];
    boolean changed = true;
    while (changed) {
      changed = false;
      for (int i = 0; i < r; i++) {
        live[i] = liveStates(dfas[i], productive, nc);
        if (!productive[i] && live[i][0]) {
          productive[i] = true;
          changed = true;
        }
      }
    }
    if (!productive[0])
      throw new GrammarException(
          "the grammar matches no string (rule '" + names.get(0) + "' can never complete)");
    // reachable states and rules from the root, through live states only
    boolean[][] reach = new boolean[r][];
    for (int i = 0; i < r; i++) reach[i] = new boolean[dfas[i].size];
    boolean[] ruleUsed = new boolean[r];
    ArrayDeque<int[]> queue = new ArrayDeque<>();
    ruleUsed[0] = true;
    reach[0][0] = true;
    queue.add(new int[] {0, 0});
    while (!queue.isEmpty()) {
      int[] rs = queue.poll();
      RuleDfa d = dfas[rs[0]];
      int s = rs[1];
      for (int c = 0; c < nc; c++) {
        int t = d.trans[s * nc + c];
        if (t >= 0 && live[rs[0]][t] && !reach[rs[0]][t]) {
          reach[rs[0]][t] = true;
          queue.add(new int[] {rs[0], t});
        }
      }
      for (int[] ref : d.refs) {
        if (ref[0] != s || !productive[ref[1]] || !live[rs[0]][ref[2]]) continue;
        if (!reach[rs[0]][ref[2]]) {
          reach[rs[0]][ref[2]] = true;
          queue.add(new int[] {rs[0], ref[2]});
        }
        if (!ruleUsed[ref[1]]) {
          ruleUsed[ref[1]] = true;
          reach[ref[1]][0] = true;
          queue.add(new int[] {ref[1], 0});
        }
      }
    }
    // renumber: rules in order, states in order
    int[] newRule = new int[r];
    Arrays.fill(newRule, -1);
    List<String> keptNames = new ArrayList<>();
    for (int i = 0; i < r; i++)
      if (ruleUsed[i]) {
        newRule[i] = keptNames.size();
        keptNames.add(names.get(i));
      }
    int[][] newState = new int[r][];
    int total = 0;
    for (int i = 0; i < r; i++) {
      newState[i] = new int[dfas[i].size];
      Arrays.fill(newState[i], -1);
      if (!ruleUsed[i]) continue;
      for (int s = 0; s < dfas[i].size; s++) if (reach[i][s]) newState[i][s] = total++;
    }
    int kr = keptNames.size();
    int[] trans = new int[total * nc];
    Arrays.fill(trans, -1);
    boolean[] accepting = new boolean[total];
    int[] ruleOfState = new int[total];
    int[] ruleStart = new int[kr];
    List<int[]> refs = new ArrayList<>(); // {from, rule, to} in new numbering
    for (int i = 0; i < r; i++) {
      if (!ruleUsed[i]) continue;
      RuleDfa d = dfas[i];
      ruleStart[newRule[i]] = newState[i][0];
      for (int s = 0; s < d.size; s++) {
        int ns = newState[i][s];
        if (ns < 0) continue;
        accepting[ns] = d.accepting[s];
        ruleOfState[ns] = newRule[i];
        for (int c = 0; c < nc; c++) {
          int t = d.trans[s * nc + c];
          if (t >= 0 && newState[i][t] >= 0) trans[ns * nc + c] = newState[i][t];
        }
      }
      for (int[] ref : d.refs) {
        int from = newState[i][ref[0]];
        int to = newState[i][ref[2]];
        if (from >= 0 && to >= 0 && productive[ref[1]] && newRule[ref[1]] >= 0)
          refs.add(new int[] {from, newRule[ref[1]], to});
      }
    }
    refs.sort((a, b) -> a[0] != b[0] ? Integer.compare(a[0], b[0]) : Integer.compare(a[1], b[1]));
    int[] refStart = new int[total + 1];
    int[] refRule = new int[refs.size()];
    int[] refTarget = new int[refs.size()];
    for (int k = 0; k < refs.size(); k++) {
      refStart[refs.get(k)[0] + 1]++;
      refRule[k] = refs.get(k)[1];
      refTarget[k] = refs.get(k)[2];
    }
    for (int s = 0; s < total; s++) refStart[s + 1] += refStart[s];
    String[] ruleNames = keptNames.toArray(new String[0]);
    Analysis a =
        new Analysis(
            total, nc, trans, accepting, refStart, refRule, refTarget, ruleStart, ruleOfState);
    a.checkLeftRecursion(ruleNames);
    long[][] follow = a.follow(classOf);
    return new Automaton(
        nc,
        classOf,
        trans,
        accepting,
        refStart,
        refRule,
        refTarget,
        ruleStart,
        ruleOfState,
        ruleNames,
        follow,
        0);
  }

  /** States of one rule DFA from which an accepting state is reachable. */
  private static boolean[] liveStates(RuleDfa d, boolean[] productive, int nc) {
    int n = d.size;
    List<List<Integer>> rev = new ArrayList<>(n);
    for (int s = 0; s < n; s++) rev.add(new ArrayList<>(2));
    for (int s = 0; s < n; s++)
      for (int c = 0; c < nc; c++) {
        int t = d.trans[s * nc + c];
        if (t >= 0) rev.get(t).add(s);
      }
    for (int[] ref : d.refs) if (productive[ref[1]]) rev.get(ref[2]).add(ref[0]);
    boolean[] live = new boolean[n];
    ArrayDeque<Integer> queue = new ArrayDeque<>();
    for (int s = 0; s < n; s++)
      if (d.accepting[s]) {
        live[s] = true;
        queue.add(s);
      }
    while (!queue.isEmpty()) {
      int t = queue.poll();
      for (int s : rev.get(t))
        if (!live[s]) {
          live[s] = true;
          queue.add(s);
        }
    }
    return live;
  }
}
