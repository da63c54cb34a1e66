package dev.troupe.engine.structured.grammar;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Subset construction of one rule's {@link Nfa} over the grammar's byte classes, with rule calls as
 * extra symbols. States are local (0 = start); {@code trans} is dense over byte classes.
 */
final class RuleDfa {

  int size;
  int[] trans; // state * numClasses + class -> state or -1
  boolean[] accepting;
  final List<int[]> refs = new ArrayList<>(); // {from, rule, to}

  /**
   * Determinizes {@code nfa}; {@code budget} is how many DFA states may still be created over the
   * whole grammar (exceeding it throws).
   */
  static RuleDfa of(Nfa nfa, int[] classOf, int numClasses, int budget, String ruleName) {
    return new Builder(nfa, classOf, numClasses, budget, ruleName).run();
  }

  private static final class Builder {
    private final Nfa nfa;
    private final int[] classOf;
    private final int numClasses;
    private final int budget;
    private final String ruleName;
    private final int[][] epsOut;
    private final int[][] byteOut; // edge indexes
    private final int[][] refOut; // edge indexes
    private final int[][] edgeClasses; // byte edge -> classes it covers
    private final Map<Key, Integer> ids = new HashMap<>();
    private final List<int[]> sets = new ArrayList<>();
    private final boolean[] mark;
    private final int[] stack;

    Builder(Nfa nfa, int[] classOf, int numClasses, int budget, String ruleName) {
      this.nfa = nfa;
      this.classOf = classOf;
      this.numClasses = numClasses;
      this.budget = budget;
      this.ruleName = ruleName;
      int n = nfa.states;
      epsOut = adjacency(n, nfa.epsEdges, nfa.epsEdgeCount, 2, 0, 1);
      byteOut = indexAdjacency(n, nfa.byteEdges, nfa.byteEdgeCount, 4);
      refOut = indexAdjacency(n, nfa.refEdges, nfa.refEdgeCount, 3);
      edgeClasses = new int[nfa.byteEdgeCount][];
      boolean[] seen = new boolean[numClasses];
      for (int e = 0; e < nfa.byteEdgeCount; e++) {
        int lo = nfa.byteEdges[e * 4 + 1];
        int hi = nfa.byteEdges[e * 4 + 2];
        int[] cs = new int[Math.min(numClasses, hi - lo + 1)];
        int k = 0;
        for (int b = lo; b <= hi; b++) {
          int c = classOf[b];
          if (!seen[c]) {
            seen[c] = true;
            cs[k++] = c;
          }
        }
        for (int i = 0; i < k; i++) seen[cs[i]] = false;
        edgeClasses[e] = Arrays.copyOf(cs, k);
      }
      mark = new boolean[n];
      stack = new int[n];
    }

    RuleDfa run() {
      RuleDfa dfa = new RuleDfa();
      intern(closure(new int[] {nfa.start}, 1));
      int[][] perClass = new int[numClasses][];
      int[] perClassLen = new int[numClasses];
      int[] touched = new int[numClasses];
      List<int[]> transRows = new ArrayList<>();
      for (int i = 0; i < sets.size(); i++) {
        int[] set = sets.get(i);
        int touchedCount = 0;
        for (int q : set) {
          for (int e : byteOut[q]) {
            int to = nfa.byteEdges[e * 4 + 3];
            for (int c : edgeClasses[e]) {
              if (perClassLen[c] == 0) {
                touched[touchedCount++] = c;
                if (perClass[c] == null) perClass[c] = new int[4];
              }
              if (perClassLen[c] == perClass[c].length)
                perClass[c] = Arrays.copyOf(perClass[c], perClass[c].length * 2);
              perClass[c][perClassLen[c]++] = to;
            }
          }
        }
        int[] row = new int[numClasses];
        Arrays.fill(row, -1);
        for (int t = 0; t < touchedCount; t++) {
          int c = touched[t];
          row[c] = intern(closure(perClass[c], perClassLen[c]));
          perClassLen[c] = 0;
        }
        transRows.add(row);
        // rule calls, grouped by callee
        Map<Integer, List<Integer>> byRule = new java.util.TreeMap<>();
        for (int q : set)
          for (int e : refOut[q])
            byRule
                .computeIfAbsent(nfa.refEdges[e * 3 + 1], k -> new ArrayList<>())
                .add(nfa.refEdges[e * 3 + 2]);
        for (var entry : byRule.entrySet()) {
          int[] targets = entry.getValue().stream().mapToInt(Integer::intValue).toArray();
          int to = intern(closure(targets, targets.length));
          dfa.refs.add(new int[] {i, entry.getKey(), to});
        }
      }
      dfa.size = sets.size();
      dfa.trans = new int[dfa.size * numClasses];
      dfa.accepting = new boolean[dfa.size];
      for (int i = 0; i < dfa.size; i++) {
        System.arraycopy(transRows.get(i), 0, dfa.trans, i * numClasses, numClasses);
        dfa.accepting[i] = Arrays.binarySearch(sets.get(i), nfa.accept) >= 0;
      }
      return dfa;
    }

    private int intern(int[] set) {
      Key k = new Key(set);
      Integer id = ids.get(k);
      if (id != null) return id;
      if (sets.size() >= budget)
        throw new GrammarException.TooLarge(
            "the automaton exceeds the bound on DFA states (while compiling rule '"
                + ruleName
                + "')");
      id = sets.size();
      ids.put(k, id);
      sets.add(set);
      return id;
    }

    private int[] closure(int[] seeds, int count) {
      int sp = 0;
      int size = 0;
      int[] out = new int[Math.max(4, count)];
      for (int i = 0; i < count; i++) {
        int s = seeds[i];
        if (!mark[s]) {
          mark[s] = true;
          stack[sp++] = s;
        }
      }
      while (sp > 0) {
        int s = stack[--sp];
        if (size == out.length) out = Arrays.copyOf(out, size * 2);
        out[size++] = s;
        for (int t : epsOut[s]) {
          if (!mark[t]) {
            mark[t] = true;
            stack[sp++] = t;
          }
        }
      }
      for (int i = 0; i < size; i++) mark[out[i]] = false;
      int[] r = Arrays.copyOf(out, size);
      Arrays.sort(r);
      return r;
    }
  }

  private static int[][] adjacency(int n, int[] edges, int count, int stride, int from, int to) {
    int[] deg = new int[n];
    for (int e = 0; e < count; e++) deg[edges[e * stride + from]]++;
    int[][] adj = new int[n][];
    for (int i = 0; i < n; i++) adj[i] = new int[deg[i]];
    int[] fill = new int[n];
    for (int e = 0; e < count; e++) {
      int f = edges[e * stride + from];
      adj[f][fill[f]++] = edges[e * stride + to];
    }
    return adj;
  }

  private static int[][] indexAdjacency(int n, int[] edges, int count, int stride) {
    int[] deg = new int[n];
    for (int e = 0; e < count; e++) deg[edges[e * stride]]++;
    int[][] adj = new int[n][];
    for (int i = 0; i < n; i++) adj[i] = new int[deg[i]];
    int[] fill = new int[n];
    for (int e = 0; e < count; e++) {
      int f = edges[e * stride];
      adj[f][fill[f]++] = e;
    }
    return adj;
  }

  /** An int array as a hash key. */
  private record Key(int[] a) {
    @Override
    public boolean equals(Object o) {
      return o instanceof Key k && Arrays.equals(a, k.a);
    }

    @Override
    public int hashCode() {
      return Arrays.hashCode(a);
    }
  }
}
