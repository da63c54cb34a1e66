package dev.troupe.engine.structured.grammar;

/**
 * A grammar compiled to a byte-level pushdown automaton: every rule is a DFA over byte classes
 * whose states are numbered globally; a state may also <em>call</em> another rule (push the return
 * state, continue at the callee's start) and an accepting state of a callee returns to the state
 * below it on the stack. Immutable and tokenizer-independent; built by {@link AutomatonCompiler}.
 *
 * <p>Every state can still reach an accepting state of its rule (dead states are trimmed), every
 * rule can complete, and no rule is left-recursive, so a stack's epsilon closure is finite and
 * every live stack can be completed.
 */
public final class Automaton {

  final int numStates;
  final int numClasses;
  final int[] classOf; // byte -> class
  final int[] trans; // state * numClasses + class -> state, or -1
  final boolean[] accepting;
  final int[] refStart; // CSR over states
  final int[] refRule;
  final int[] refTarget;
  final int[] ruleStart;
  final int[] ruleOfState;
  final String[] ruleNames;
  final long[][] follow; // rule -> 256-bit set of bytes that may follow the rule's completion
  final int rootRule;
  final boolean[] pureExit; // accepting, no transitions, no calls: returning is all it can do
  final int[] completionBytes; // fewest bytes that complete the state's rule (Completions)

  Automaton(
      int numClasses,
      int[] classOf,
      int[] trans,
      boolean[] accepting,
      int[] refStart,
      int[] refRule,
      int[] refTarget,
      int[] ruleStart,
      int[] ruleOfState,
      String[] ruleNames,
      long[][] follow,
      int rootRule) {
    this.numStates = accepting.length;
    this.numClasses = numClasses;
    this.classOf = classOf;
    this.trans = trans;
    this.accepting = accepting;
    this.refStart = refStart;
    this.refRule = refRule;
    this.refTarget = refTarget;
    this.ruleStart = ruleStart;
    this.ruleOfState = ruleOfState;
    this.ruleNames = ruleNames;
    this.follow = follow;
    this.rootRule = rootRule;
    this.pureExit = new boolean[numStates];
    for (int s = 0; s < numStates; s++) {
      boolean exit = accepting[s] && refStart[s] == refStart[s + 1];
      for (int c = 0; exit && c < numClasses; c++) if (trans[s * numClasses + c] >= 0) exit = false;
      pureExit[s] = exit;
    }
    this.completionBytes = Completions.bytesPerState(this);
  }

  /** Number of DFA states over all rules. */
  public int states() {
    return numStates;
  }

  /** Number of rules kept (those reachable from the root). */
  public int rules() {
    return ruleStart.length;
  }

  /** Number of byte equivalence classes. */
  public int byteClasses() {
    return numClasses;
  }

  /** The start state of the root rule. */
  int rootStart() {
    return ruleStart[rootRule];
  }

  /** Approximate heap footprint of the tables, in bytes. */
  long bytes() {
    return 4L * trans.length + 4L * (refRule.length * 2L + refStart.length) + 12L * numStates;
  }

  /** Whether byte {@code b} may follow the completion of {@code rule} somewhere in the grammar. */
  boolean mayFollow(int rule, int b) {
    return (follow[rule][b >>> 6] & (1L << (b & 63))) != 0;
  }

  /**
   * Runs the automaton over a whole byte string from the root (no tokens involved): the grammar's
   * own string matcher, used by tests as the reference language.
   */
  public boolean matches(byte[] text) {
    StackSets s = new StackSets(this);
    int set = s.initial();
    for (byte b : text) {
      set = s.step(set, b & 0xFF);
      if (set == StackSets.DEAD) return false;
    }
    return s.canTerminate(set);
  }

  /** Whether {@code text} is a prefix of some string of the language. */
  public boolean isPrefix(byte[] text) {
    StackSets s = new StackSets(this);
    int set = s.initial();
    for (byte b : text) {
      set = s.step(set, b & 0xFF);
      if (set == StackSets.DEAD) return false;
    }
    return true;
  }
}
