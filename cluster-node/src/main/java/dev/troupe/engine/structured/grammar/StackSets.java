package dev.troupe.engine.structured.grammar;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The pushdown automaton's configurations, interned: a <em>stack</em> is a node (state, parent
 * node) shared persistently with every stack that has the same bottom part; a <em>set</em> of
 * stacks (the nondeterministic configuration) is a sorted array of node ids, always closed under
 * calls (push the callee's start) and returns (pop when the top is accepting). Both get small int
 * ids, and byte transitions of sets are memoized, so a walk that revisits a configuration costs an
 * array lookup.
 *
 * <p>Parent {@code -1} is the bottom: for a matcher's stacks that is the root rule; for the
 * precomputation's relative walks it is the state the walk started from, whose parent is unknown.
 * Either way, "the bottom node's state is accepting" means the part below may continue: the output
 * may end (root), or the walk depends on context (relative).
 *
 * <p>Grows monotonically; not thread-safe. One per compile (precomputation) and one per request
 * (its matchers, which may share it on the engine thread).
 */
public final class StackSets {

  /** The empty set: no stack survives. */
  public static final int DEAD = 0;

  private final Automaton a;
  private final int nc;

  private int[] nodeState = new int[64];
  private int[] nodeParent = new int[64];
  private int nodeCount;
  private final Map<Long, Integer> nodeIds = new HashMap<>();

  private final List<int[]> sets = new ArrayList<>();
  private final Map<Key, Integer> setIds = new HashMap<>();
  private boolean[] terminable = new boolean[64];
  private int[][] memo = new int[64][];
  private int[][] tops = new int[64][];

  private int[] nodeDistance = new int[64]; // fewest bytes completing the stack; 0 = unknown
  private int[] setDistance = new int[64]; // the same for a set; 0 = unknown

  private int[] mark = new int[64];
  private int generation;
  private int[] work = new int[64];
  private int[] buf = new int[64];

  public StackSets(Automaton automaton) {
    this.a = automaton;
    this.nc = automaton.numClasses;
    intern(new int[0]); // DEAD = 0
  }

  public Automaton automaton() {
    return a;
  }

  /** The configuration before any output: the root rule at its start. */
  public int initial() {
    return closure(new int[] {node(a.rootStart(), -1)}, 1);
  }

  /** A relative walk's start: {@code state} on an unknown stack. */
  int relative(int state) {
    return closure(new int[] {node(state, -1)}, 1);
  }

  /** The set after consuming byte {@code b} (0..255), or {@link #DEAD}. */
  public int step(int set, int b) {
    int c = a.classOf[b];
    int[] row = memo[set];
    if (row != null && row[c] >= 0) return row[c];
    int result = computeStep(set, c);
    row = memo[set];
    if (row == null) {
      row = new int[nc];
      Arrays.fill(row, -1);
      memo[set] = row;
    }
    row[c] = result;
    return result;
  }

  /** Consumes a byte string; {@link #DEAD} as soon as no stack survives. */
  public int steps(int set, byte[] bytes) {
    for (int i = 0; i < bytes.length && set != DEAD; i++) set = step(set, bytes[i] & 0xFF);
    return set;
  }

  /** Whether a bottom node of the set is accepting (root: the output may end here). */
  public boolean canTerminate(int set) {
    return terminable[set];
  }

  /**
   * The fewest bytes that complete the output from this configuration (0: it may end here): over
   * its stacks, the least sum over their frames of the bytes that complete each frame's rule. Every
   * byte can be one token in byte-level vocabularies, so it also bounds the tokens still needed.
   */
  public int bytesToComplete(int set) {
    if (set == DEAD) return Completions.UNKNOWN;
    if (set >= setDistance.length)
      setDistance = Arrays.copyOf(setDistance, Math.max(set + 1, setDistance.length * 2));
    int known = setDistance[set];
    if (known != 0) return known - 1;
    int best = Completions.UNKNOWN;
    for (int n : sets.get(set)) best = Math.min(best, stackDistance(n));
    setDistance[set] = best == Completions.UNKNOWN ? best : best + 1;
    return best;
  }

  /** The fewest bytes completing the stack whose top is {@code node}, memoized per node. */
  private int stackDistance(int node) {
    if (nodeDistance.length < nodeState.length)
      nodeDistance = Arrays.copyOf(nodeDistance, nodeState.length);
    // the frames from the top down to the first one already known (or the bottom)
    int depth = 0;
    int below = 0;
    for (int n = node; n >= 0; n = nodeParent[n]) {
      if (nodeDistance[n] != 0) {
        below = nodeDistance[n] - 1;
        break;
      }
      if (depth == work.length) work = Arrays.copyOf(work, depth * 2);
      work[depth++] = n;
    }
    long sum = below;
    for (int i = depth - 1; i >= 0; i--) {
      int n = work[i];
      sum = Math.min(Completions.UNKNOWN - 1L, sum + a.completionBytes[nodeState[n]]);
      nodeDistance[n] = (int) sum + 1;
    }
    return (int) sum;
  }

  /** The distinct top states of the set's stacks, ascending. */
  int[] tops(int set) {
    int[] t = tops[set];
    if (t != null) return t;
    int[] members = sets.get(set);
    int[] states = new int[members.length];
    for (int i = 0; i < members.length; i++) states[i] = nodeState[members[i]];
    Arrays.sort(states);
    int k = 0;
    for (int i = 0; i < states.length; i++)
      if (k == 0 || states[k - 1] != states[i]) states[k++] = states[i];
    t = Arrays.copyOf(states, k);
    tops[set] = t;
    return t;
  }

  /** Number of interned sets (for tests and size accounting). */
  int size() {
    return sets.size();
  }

  private int computeStep(int set, int c) {
    int[] members = sets.get(set);
    int k = 0;
    for (int n : members) {
      int t = a.trans[nodeState[n] * nc + c];
      if (t >= 0) {
        if (k == buf.length) buf = Arrays.copyOf(buf, k * 2);
        buf[k++] = node(t, nodeParent[n]);
      }
    }
    if (k == 0) return DEAD;
    return closure(buf, k);
  }

  /**
   * Closes nodes under calls and returns and interns the result. A call whose return state is a
   * pure exit (accepting, no transitions, no calls) is a tail call: the callee returns straight to
   * the caller's parent, so right recursion does not grow the stack.
   */
  private int closure(int[] seeds, int count) {
    generation++;
    int sp = 0;
    int size = 0;
    int[] out = new int[Math.max(8, count * 2)];
    for (int i = 0; i < count; i++) sp = push(seeds[i], sp);
    while (sp > 0) {
      int n = work[--sp];
      if (size == out.length) out = Arrays.copyOf(out, size * 2);
      out[size++] = n;
      int q = nodeState[n];
      int parent = nodeParent[n];
      for (int k = a.refStart[q]; k < a.refStart[q + 1]; k++) {
        int t = a.refTarget[k];
        int ret = a.pureExit[t] ? parent : node(t, parent);
        sp = push(node(a.ruleStart[a.refRule[k]], ret), sp);
      }
      if (a.accepting[q] && parent >= 0) sp = push(parent, sp);
    }
    int[] r = Arrays.copyOf(out, size);
    Arrays.sort(r);
    return intern(r);
  }

  private int push(int node, int sp) {
    if (node >= mark.length) mark = Arrays.copyOf(mark, Math.max(node + 1, mark.length * 2));
    if (mark[node] == generation) return sp;
    mark[node] = generation;
    if (sp == work.length) work = Arrays.copyOf(work, sp * 2);
    work[sp] = node;
    return sp + 1;
  }

  private int node(int state, int parent) {
    long key = ((long) state << 32) | (parent & 0xFFFFFFFFL);
    Integer id = nodeIds.get(key);
    if (id != null) return id;
    if (nodeCount == nodeState.length) {
      nodeState = Arrays.copyOf(nodeState, nodeCount * 2);
      nodeParent = Arrays.copyOf(nodeParent, nodeCount * 2);
    }
    nodeState[nodeCount] = state;
    nodeParent[nodeCount] = parent;
    nodeIds.put(key, nodeCount);
    return nodeCount++;
  }

  private int intern(int[] members) {
    Key key = new Key(members);
    Integer id = setIds.get(key);
    if (id != null) return id;
    id = sets.size();
    sets.add(members);
    setIds.put(key, id);
    if (id == terminable.length) {
      terminable = Arrays.copyOf(terminable, id * 2);
      memo = Arrays.copyOf(memo, id * 2);
      tops = Arrays.copyOf(tops, id * 2);
    }
    boolean term = false;
    for (int n : members) if (nodeParent[n] < 0 && a.accepting[nodeState[n]]) term = true;
    terminable[id] = term;
    return id;
  }

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
