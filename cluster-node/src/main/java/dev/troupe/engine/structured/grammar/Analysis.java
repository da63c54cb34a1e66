package dev.troupe.engine.structured.grammar;

/**
 * Whole-grammar facts over the linked automaton: which rules can complete without consuming input
 * (nullable), left recursion (refused: the stack closure would grow forever), and FIRST/FOLLOW byte
 * sets (256-bit bitsets as {@code long[4]}).
 */
final class Analysis {

  private final int n;
  private final int nc;
  private final int[] trans;
  private final boolean[] accepting;
  private final int[] refStart;
  private final int[] refRule;
  private final int[] refTarget;
  private final int[] ruleStart;
  private final int[] ruleOfState;
  final boolean[] nullableState;
  final boolean[] nullableRule;

  Analysis(
      int n,
      int nc,
      int[] trans,
      boolean[] accepting,
      int[] refStart,
      int[] refRule,
      int[] refTarget,
      int[] ruleStart,
      int[] ruleOfState) {
    this.n = n;
    this.nc = nc;
    this.trans = trans;
    this.accepting = accepting;
    this.refStart = refStart;
    this.refRule = refRule;
    this.refTarget = refTarget;
    this.ruleStart = ruleStart;
    this.ruleOfState = ruleOfState;
    nullableState = accepting.clone();
    nullableRule = new boolean[ruleStart.length];
    boolean changed = true;
    while (changed) {
      changed = false;
      for (int r = 0; r < ruleStart.length; r++)
        if (!nullableRule[r] && nullableState[ruleStart[r]]) {
          nullableRule[r] = true;
          changed = true;
        }
      for (int s = 0; s < n; s++) {
        if (nullableState[s]) continue;
        for (int k = refStart[s]; k < refStart[s + 1]; k++)
          if (nullableRule[refRule[k]] && nullableState[refTarget[k]]) {
            nullableState[s] = true;
            changed = true;
            break;
          }
      }
    }
  }

  /** Refuses rules that can call themselves (directly or not) before consuming a byte. */
  void checkLeftRecursion(String[] ruleNames) {
    int r = ruleStart.length;
    // leftCalls[R] = rules R may call at a position reached without consuming input
    boolean[][] leftCalls = new boolean[r][r];
    for (int rule = 0; rule < r; rule++) {
      boolean[] seen = new boolean[n];
      java.util.ArrayDeque<Integer> queue = new java.util.ArrayDeque<>();
      seen[ruleStart[rule]] = true;
      queue.add(ruleStart[rule]);
      while (!queue.isEmpty()) {
        int s = queue.poll();
        for (int k = refStart[s]; k < refStart[s + 1]; k++) {
          leftCalls[rule][refRule[k]] = true;
          int t = refTarget[k];
          if (nullableRule[refRule[k]] && !seen[t]) {
            seen[t] = true;
            queue.add(t);
          }
        }
      }
    }
    int[] color = new int[r];
    for (int rule = 0; rule < r; rule++)
      if (color[rule] == 0) {
        int cyc = dfs(rule, leftCalls, color);
        if (cyc >= 0)
          throw new GrammarException(
              "the grammar is left-recursive: rule '"
                  + ruleNames[cyc]
                  + "' can reach itself before consuming any input");
      }
  }

  private static int dfs(int u, boolean[][] g, int[] color) {
    color[u] = 1;
    for (int v = 0; v < g.length; v++) {
      if (!g[u][v]) continue;
      if (color[v] == 1) return v;
      if (color[v] == 0) {
        int c = dfs(v, g, color);
        if (c >= 0) return c;
      }
    }
    color[u] = 2;
    return -1;
  }

  /**
   * FOLLOW byte sets per rule (the bytes that may come right after the rule completes, in any
   * context); the root is followed by the end of the output only.
   */
  long[][] follow(int[] classOf) {
    long[][] classBytes = new long[nc][4];
    for (int b = 0; b < 256; b++) classBytes[classOf[b]][b >>> 6] |= 1L << (b & 63);
    long[][] first = new long[n][4];
    for (int s = 0; s < n; s++)
      for (int c = 0; c < nc; c++) if (trans[s * nc + c] >= 0) or(first[s], classBytes[c]);
    boolean changed = true;
    while (changed) {
      changed = false;
      for (int s = 0; s < n; s++)
        for (int k = refStart[s]; k < refStart[s + 1]; k++) {
          changed |= or(first[s], first[ruleStart[refRule[k]]]);
          if (nullableRule[refRule[k]]) changed |= or(first[s], first[refTarget[k]]);
        }
    }
    long[][] follow = new long[ruleStart.length][4];
    changed = true;
    while (changed) {
      changed = false;
      for (int s = 0; s < n; s++)
        for (int k = refStart[s]; k < refStart[s + 1]; k++) {
          int callee = refRule[k];
          int t = refTarget[k];
          changed |= or(follow[callee], first[t]);
          if (nullableState[t]) changed |= or(follow[callee], follow[ruleOfState[s]]);
        }
    }
    return follow;
  }

  private static boolean or(long[] into, long[] from) {
    boolean changed = false;
    for (int i = 0; i < 4; i++) {
      long v = into[i] | from[i];
      if (v != into[i]) {
        into[i] = v;
        changed = true;
      }
    }
    return changed;
  }
}
