package dev.troupe.engine.structured.grammar;

import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * The Thompson NFA of one rule body: byte-range edges, epsilon edges and rule-reference edges (a
 * call of another rule, consumed as one symbol by the subset construction). Repetitions are
 * unrolled; the state count is bounded by {@link Limits#maxNfaStates()}.
 */
final class Nfa {

  final int start;
  final int accept;
  int states;
  // byte edges: from, lo, hi, to
  int[] byteEdges = new int[64];
  int byteEdgeCount;
  // epsilon edges: from, to
  int[] epsEdges = new int[64];
  int epsEdgeCount;
  // rule-reference edges: from, rule index, to
  int[] refEdges = new int[16];
  int refEdgeCount;

  private final Map<String, Integer> ruleIndex;
  private final int maxStates;
  private final String ruleName;

  private Nfa(Map<String, Integer> ruleIndex, int maxStates, String ruleName) {
    this.ruleIndex = ruleIndex;
    this.maxStates = maxStates;
    this.ruleName = ruleName;
    this.start = newState();
    this.accept = newState();
  }

  /** Builds the NFA of one rule body; rule references are resolved through {@code ruleIndex}. */
  static Nfa build(String ruleName, Expr body, Map<String, Integer> ruleIndex, int maxStates) {
    Nfa nfa = new Nfa(ruleIndex, maxStates, ruleName);
    nfa.add(body, nfa.start, nfa.accept);
    return nfa;
  }

  private int newState() {
    if (states >= maxStates)
      throw new GrammarException.TooLarge(
          "the automaton of rule '" + ruleName + "' exceeds " + maxStates + " NFA states");
    return states++;
  }

  private void eps(int from, int to) {
    if (epsEdgeCount * 2 + 2 > epsEdges.length)
      epsEdges = Arrays.copyOf(epsEdges, epsEdges.length * 2);
    epsEdges[epsEdgeCount * 2] = from;
    epsEdges[epsEdgeCount * 2 + 1] = to;
    epsEdgeCount++;
  }

  private void bytes(int from, int lo, int hi, int to) {
    if (byteEdgeCount * 4 + 4 > byteEdges.length)
      byteEdges = Arrays.copyOf(byteEdges, byteEdges.length * 2);
    int i = byteEdgeCount * 4;
    byteEdges[i] = from;
    byteEdges[i + 1] = lo;
    byteEdges[i + 2] = hi;
    byteEdges[i + 3] = to;
    byteEdgeCount++;
  }

  private void refEdge(int from, int rule, int to) {
    if (refEdgeCount * 3 + 3 > refEdges.length)
      refEdges = Arrays.copyOf(refEdges, refEdges.length * 2);
    int i = refEdgeCount * 3;
    refEdges[i] = from;
    refEdges[i + 1] = rule;
    refEdges[i + 2] = to;
    refEdgeCount++;
  }

  /** Adds a fragment matching {@code e} from state {@code s} to state {@code t}. */
  private void add(Expr e, int s, int t) {
    if (e instanceof Expr.Empty) {
      eps(s, t);
    } else if (e instanceof Expr.Bytes b) {
      byte[] bs = b.bytes();
      int cur = s;
      for (int i = 0; i < bs.length; i++) {
        int next = i == bs.length - 1 ? t : newState();
        bytes(cur, bs[i] & 0xFF, bs[i] & 0xFF, next);
        cur = next;
      }
    } else if (e instanceof Expr.CharSet c) {
      for (int[][] seq : Utf8Ranges.of(c.ranges())) {
        int cur = s;
        for (int i = 0; i < seq.length; i++) {
          int next = i == seq.length - 1 ? t : newState();
          bytes(cur, seq[i][0], seq[i][1], next);
          cur = next;
        }
      }
    } else if (e instanceof Expr.ByteSet b) {
      int[] r = b.ranges();
      for (int i = 0; i < r.length; i += 2) bytes(s, r[i], r[i + 1], t);
    } else if (e instanceof Expr.Seq q) {
      List<Expr> items = q.items();
      int cur = s;
      for (int i = 0; i < items.size(); i++) {
        int next = i == items.size() - 1 ? t : newState();
        add(items.get(i), cur, next);
        cur = next;
      }
      if (items.isEmpty()) eps(s, t);
    } else if (e instanceof Expr.Alt a) {
      for (Expr o : a.options()) add(o, s, t);
    } else if (e instanceof Expr.Repeat r) {
      addRepeat(r, s, t);
    } else if (e instanceof Expr.Ref r) {
      Integer idx = ruleIndex.get(r.rule());
      if (idx == null) throw new GrammarException("undefined rule '" + r.rule() + "'");
      refEdge(s, idx, t);
    } else if (e instanceof Expr.TagDispatch d) {
      addTagDispatch(d, s, t);
    } else {
      throw new IllegalStateException("unknown expression " + e);
    }
  }

  private void addRepeat(Expr.Repeat r, int s, int t) {
    int cur = s;
    for (int i = 0; i < r.min(); i++) {
      int next = newState();
      add(r.body(), cur, next);
      cur = next;
    }
    if (r.max() == Expr.Repeat.UNBOUNDED) {
      int loop = newState();
      int back = newState();
      eps(cur, loop);
      add(r.body(), loop, back);
      eps(back, loop);
      eps(loop, t);
    } else {
      for (int i = r.min(); i < r.max(); i++) {
        eps(cur, t);
        int next = newState();
        add(r.body(), cur, next);
        cur = next;
      }
      eps(cur, t);
    }
  }

  /**
   * An Aho-Corasick automaton over the triggers: free text moves between trie nodes by the goto
   * function; a node where a trigger is complete moves (by epsilon) into that trigger's body, which
   * returns to the trie root. Every other node may end the text.
   */
  private void addTagDispatch(Expr.TagDispatch d, int s, int t) {
    List<byte[]> triggers = new ArrayList<>();
    for (String trig : d.triggers()) triggers.add(trig.getBytes(StandardCharsets.UTF_8));
    // trie
    List<int[]> children = new ArrayList<>(); // node -> 256 children (-1 none)
    List<Integer> terminal = new ArrayList<>(); // node -> trigger index or -1
    children.add(filled());
    terminal.add(-1);
    for (int i = 0; i < triggers.size(); i++) {
      int node = 0;
      for (byte b : triggers.get(i)) {
        int c = children.get(node)[b & 0xFF];
        if (c < 0) {
          c = children.size();
          children.add(filled());
          terminal.add(-1);
          children.get(node)[b & 0xFF] = c;
        }
        node = c;
      }
      if (terminal.get(node) < 0) terminal.set(node, i);
    }
    int n = children.size();
    int[] fail = new int[n];
    int[] output = new int[n]; // trigger completed at this node (itself or a suffix), or -1
    int[][] go = new int[n][];
    ArrayDeque<Integer> queue = new ArrayDeque<>();
    go[0] = new int[256];
    for (int b = 0; b < 256; b++) {
      int c = children.get(0)[b];
      go[0][b] = c < 0 ? 0 : c;
      if (c >= 0) {
        fail[c] = 0;
        queue.add(c);
      }
    }
    output[0] = -1;
    while (!queue.isEmpty()) {
      int u = queue.poll();
      output[u] = terminal.get(u) >= 0 ? terminal.get(u) : output[fail[u]];
      go[u] = new int[256];
      for (int b = 0; b < 256; b++) {
        int c = children.get(u)[b];
        if (c >= 0) {
          fail[c] = go[fail[u]][b];
          go[u][b] = c;
          queue.add(c);
        } else {
          go[u][b] = go[fail[u]][b];
        }
      }
    }
    int[] nfaState = new int[n];
    for (int u = 0; u < n; u++) nfaState[u] = newState();
    eps(s, nfaState[0]);
    int[] bodyStart = new int[triggers.size()];
    for (int i = 0; i < triggers.size(); i++) {
      bodyStart[i] = newState();
      int end = newState();
      add(d.bodies().get(i), bodyStart[i], end);
      eps(end, nfaState[0]);
    }
    for (int u = 0; u < n; u++) {
      if (output[u] >= 0) {
        eps(nfaState[u], bodyStart[output[u]]);
        continue;
      }
      eps(nfaState[u], t);
      int b = 0;
      while (b < 256) {
        int target = go[u][b];
        int end = b;
        while (end + 1 < 256 && go[u][end + 1] == target) end++;
        bytes(nfaState[u], b, end, nfaState[target]);
        b = end + 1;
      }
    }
  }

  private static int[] filled() {
    int[] a = new int[256];
    Arrays.fill(a, -1);
    return a;
  }
}
