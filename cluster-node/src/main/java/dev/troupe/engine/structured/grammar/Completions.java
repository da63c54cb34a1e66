package dev.troupe.engine.structured.grammar;

import java.util.ArrayDeque;
import java.util.Arrays;

/**
 * The fewest bytes that complete each state's rule: 0 for an accepting state, else the shortest way
 * to one through byte edges (1 each) and calls (the callee's own fewest bytes, then the return
 * state's). Summed over a stack's frames this is the fewest bytes that complete a whole output,
 * which is what lets a matcher keep an output completable within a token budget ({@link
 * GrammarMatcher#restrictToBudget}).
 *
 * <p>Computed once per automaton by relaxing edges to a fixed point from the accepting states
 * backwards (every state can complete: dead states are trimmed, so every value ends finite).
 */
final class Completions {

  static final int UNKNOWN = Integer.MAX_VALUE;

  private Completions() {}

  /** Per state, the fewest bytes to an accepting state of its rule. */
  static int[] bytesPerState(Automaton a) {
    int n = a.numStates;
    int nc = a.numClasses;
    // reverse edges: for each state, who reaches it by a byte or returns to it after a call, and
    // for each rule, the states that call it
    int[][] byteFrom = reverse(n, a, false);
    int[][] returnFrom = reverse(n, a, true);
    int[][] callers = new int[a.ruleStart.length][];
    int[] callerCount = new int[a.ruleStart.length];
    for (int k = 0; k < a.refRule.length; k++) callerCount[a.refRule[k]]++;
    for (int r = 0; r < callers.length; r++) callers[r] = new int[callerCount[r]];
    Arrays.fill(callerCount, 0);
    for (int s = 0; s < n; s++)
      for (int k = a.refStart[s]; k < a.refStart[s + 1]; k++) {
        int r = a.refRule[k];
        callers[r][callerCount[r]++] = s;
      }
    int[] startOf = new int[n];
    Arrays.fill(startOf, -1);
    for (int r = 0; r < a.ruleStart.length; r++) startOf[a.ruleStart[r]] = r;

    int[] dist = new int[n];
    Arrays.fill(dist, UNKNOWN);
    ArrayDeque<Integer> work = new ArrayDeque<>();
    boolean[] queued = new boolean[n];
    for (int s = 0; s < n; s++)
      if (a.accepting[s]) {
        dist[s] = 0;
        work.add(s);
        queued[s] = true;
      }
    while (!work.isEmpty()) {
      int t = work.poll();
      queued[t] = false;
      // predecessors whose value may drop because t's did: byte edges into t, calls returning to
      // t, and (when t starts a rule) every call of that rule
      for (int s : byteFrom[t]) relax(a, s, dist, nc, work, queued);
      for (int s : returnFrom[t]) relax(a, s, dist, nc, work, queued);
      if (startOf[t] >= 0) for (int s : callers[startOf[t]]) relax(a, s, dist, nc, work, queued);
    }
    return dist;
  }

  /** Recomputes state s from its successors; queues it when its value dropped. */
  private static void relax(
      Automaton a, int s, int[] dist, int nc, ArrayDeque<Integer> work, boolean[] queued) {
    int best = dist[s];
    for (int c = 0; c < nc; c++) {
      int t = a.trans[s * nc + c];
      if (t >= 0 && dist[t] != UNKNOWN) best = Math.min(best, dist[t] + 1);
    }
    for (int k = a.refStart[s]; k < a.refStart[s + 1]; k++) {
      int callee = dist[a.ruleStart[a.refRule[k]]];
      int after = dist[a.refTarget[k]];
      if (callee != UNKNOWN && after != UNKNOWN) best = Math.min(best, callee + after);
    }
    if (best < dist[s]) {
      dist[s] = best;
      if (!queued[s]) {
        queued[s] = true;
        work.add(s);
      }
    }
  }

  /** For each state, the states that reach it by a byte edge (or by returning from a call). */
  private static int[][] reverse(int n, Automaton a, boolean returns) {
    int[] count = new int[n];
    forEachEdge(a, returns, (s, t) -> count[t]++);
    int[][] out = new int[n][];
    for (int t = 0; t < n; t++) out[t] = new int[count[t]];
    Arrays.fill(count, 0);
    forEachEdge(a, returns, (s, t) -> out[t][count[t]++] = s);
    return out;
  }

  private interface Edge {
    void of(int from, int to);
  }

  private static void forEachEdge(Automaton a, boolean returns, Edge edge) {
    int nc = a.numClasses;
    for (int s = 0; s < a.numStates; s++) {
      if (returns) {
        for (int k = a.refStart[s]; k < a.refStart[s + 1]; k++) edge.of(s, a.refTarget[k]);
        continue;
      }
      int last = -1; // classes leading to the same state count once
      for (int c = 0; c < nc; c++) {
        int t = a.trans[s * nc + c];
        if (t >= 0 && t != last) edge.of(s, t);
        last = t >= 0 ? t : last;
      }
    }
  }
}
