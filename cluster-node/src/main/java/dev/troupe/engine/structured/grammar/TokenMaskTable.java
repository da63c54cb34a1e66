package dev.troupe.engine.structured.grammar;

import java.util.Arrays;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Per automaton state, the vocabulary split three ways (xgrammar's "adaptive token mask cache"):
 * tokens <em>accepted</em> whatever the stack below the state holds, tokens <em>rejected</em>
 * whatever it holds, and <em>uncertain</em> ones, which would complete the state's rule and then
 * need bytes from the unknown caller. Computed once per grammar by walking the vocabulary trie from
 * each state on an unknown stack; a subtree is skipped as soon as its prefix dies. Uncertain tokens
 * are only those whose byte after the rule's completion may follow the rule somewhere (its FOLLOW
 * set), so they stay few; the matcher checks them against the real stack at run time.
 *
 * <p>Each state keeps whichever is smallest of: the accepted ids, the rejected ids, or a bitset.
 */
final class TokenMaskTable {

  static final byte ACCEPT_LIST = 0;
  static final byte REJECT_LIST = 1;
  static final byte BITS = 2;

  private final byte[] kind;
  private final int[][] ids; // ACCEPT_LIST / REJECT_LIST
  private final long[][] bits; // BITS
  private final int[][] uncertain;
  private final long bytes;

  // written by the build's workers, read by matchers on other threads: published by the final
  // fields of this object (constructed after every worker finished)

  private TokenMaskTable(byte[] kind, int[][] ids, long[][] bits, int[][] uncertain, long bytes) {
    this.kind = kind;
    this.ids = ids;
    this.bits = bits;
    this.uncertain = uncertain;
    this.bytes = bytes;
  }

  /** Walks the vocabulary from every state, on this thread only. */
  static TokenMaskTable build(Automaton a, TokenVocabulary v, long maxBytes) {
    return build(a, v, maxBytes, null, 1);
  }

  /**
   * Walks the vocabulary from every state. With {@code helpers} and {@code parallelism} &gt; 1, up
   * to {@code parallelism - 1} tasks on {@code helpers} share the states with the calling thread
   * (each with its own configuration store); the caller never waits for a helper that has not
   * started, so a saturated executor only makes the build single-threaded.
   */
  static TokenMaskTable build(
      Automaton a, TokenVocabulary v, long maxBytes, Executor helpers, int parallelism) {
    int n = a.numStates;
    Shared sh = new Shared(a, v, maxBytes, n);
    if (helpers != null && parallelism > 1 && n > 64) {
      for (int i = 1; i < parallelism; i++) {
        try {
          helpers.execute(sh::help);
        } catch (RejectedExecutionException e) {
          break;
        }
      }
    }
    sh.work();
    sh.awaitHelpers();
    if (sh.failure != null) throw sh.failure;
    long total = sh.total.get();
    if (total > maxBytes) throw tooLarge(maxBytes);
    return new TokenMaskTable(sh.kind, sh.ids, sh.bits, sh.uncertain, total);
  }

  private static GrammarException.TooLarge tooLarge(long maxBytes) {
    return new GrammarException.TooLarge(
        "the grammar's token tables exceed " + (maxBytes >> 20) + " MiB");
  }

  /** The results being filled in and the states still to do, shared by the workers. */
  private static final class Shared {
    final Automaton a;
    final TokenVocabulary v;
    final long maxBytes;
    final byte[] kind;
    final int[][] ids;
    final long[][] bits;
    final int[][] uncertain;
    final AtomicInteger next = new AtomicInteger();
    final AtomicLong total;
    private int active;
    volatile RuntimeException failure;

    /** The thread that asked for the table: helpers stop too when it is interrupted. */
    final Thread owner = Thread.currentThread();

    Shared(Automaton a, TokenVocabulary v, long maxBytes, int n) {
      this.a = a;
      this.v = v;
      this.maxBytes = maxBytes;
      kind = new byte[n];
      ids = new int[n][];
      bits = new long[n][];
      uncertain = new int[n][];
      total = new AtomicLong(a.bytes());
    }

    void help() {
      synchronized (this) {
        active++;
      }
      try {
        work();
      } finally {
        synchronized (this) {
          active--;
          notifyAll();
        }
      }
    }

    void work() {
      Worker w = null;
      try {
        for (int p = next.getAndIncrement(); p < kind.length; p = next.getAndIncrement()) {
          if (failure != null) return;
          if (owner.isInterrupted()) { // the request that asked for it was cancelled
            failure =
                new java.util.concurrent.CancellationException("grammar compilation cancelled");
            next.set(kind.length);
            return;
          }
          if (w == null) w = new Worker(this);
          if (total.addAndGet(w.state(p)) > maxBytes) {
            failure = tooLarge(maxBytes);
            next.set(kind.length);
          }
        }
      } catch (RuntimeException e) {
        failure = e;
        next.set(kind.length);
      }
    }

    synchronized void awaitHelpers() {
      boolean interrupted = false;
      while (active > 0) {
        try {
          wait();
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
      if (interrupted) Thread.currentThread().interrupt();
    }
  }

  /** One thread's walker: its own configuration store and scratch buffers. */
  private static final class Worker {
    private final Shared sh;
    private final Automaton a;
    private final TokenVocabulary v;
    private final StackSets ss;
    private final int[] setAt;
    private final boolean[] flagAt;
    private int[] acc = new int[1024];
    private int[] unc = new int[256];
    private final long[] scratch;

    Worker(Shared sh) {
      this.sh = sh;
      this.a = sh.a;
      this.v = sh.v;
      this.ss = new StackSets(a);
      int maxDepth = 1;
      for (int k = 0; k < v.nodes; k++) maxDepth = Math.max(maxDepth, v.depth[k]);
      setAt = new int[maxDepth + 1];
      flagAt = new boolean[maxDepth + 1];
      scratch = new long[TokenVocabulary.words(v.size())];
    }

    /** Classifies the vocabulary at state p, stores the row, returns its size in bytes. */
    long state(int p) {
      int words = scratch.length;
      int rule = a.ruleOfState[p];
      setAt[0] = ss.relative(p);
      flagAt[0] = false;
      int na = 0;
      int nu = 0;
      int k = 0;
      int nodes = v.nodes;
      short[] depth = v.depth;
      byte[] label = v.label;
      while (k < nodes) {
        int d = depth[k];
        int ps = setAt[d - 1];
        int b = label[k] & 0xFF;
        int s = ss.step(ps, b);
        boolean f = flagAt[d - 1] || (ss.canTerminate(ps) && a.mayFollow(rule, b));
        if (s == StackSets.DEAD) {
          if (f) {
            int from = v.tokBefore[k];
            int to = v.tokBefore[v.subtreeEnd[k]];
            if (nu + (to - from) > unc.length)
              unc = Arrays.copyOf(unc, Math.max(unc.length * 2, nu + to - from));
            System.arraycopy(v.sorted, from, unc, nu, to - from);
            nu += to - from;
          }
          k = v.subtreeEnd[k];
          continue;
        }
        int own = v.ownTokens[k];
        if (own > 0) {
          if (na + own > acc.length) acc = Arrays.copyOf(acc, Math.max(acc.length * 2, na + own));
          System.arraycopy(v.sorted, v.tokBefore[k], acc, na, own);
          na += own;
        }
        setAt[d] = s;
        flagAt[d] = f;
        k++;
      }
      int rejected = v.universeCount() - na - nu;
      long listAccept = 4L * na;
      long listReject = 4L * rejected;
      long bitset = 8L * words;
      long size;
      if (listAccept <= listReject && listAccept <= bitset) {
        sh.kind[p] = ACCEPT_LIST;
        sh.ids[p] = sortedCopy(acc, na);
        size = listAccept;
      } else if (listReject <= bitset) {
        sh.kind[p] = REJECT_LIST;
        // rejected = universe minus accepted minus uncertain
        Arrays.fill(scratch, 0);
        for (int i = 0; i < na; i++) scratch[acc[i] >>> 6] |= 1L << acc[i];
        for (int i = 0; i < nu; i++) scratch[unc[i] >>> 6] |= 1L << unc[i];
        long[] u = v.universe();
        int[] rej = new int[rejected];
        int r = 0;
        for (int w = 0; w < words; w++) {
          long x = u[w] & ~scratch[w];
          while (x != 0) {
            rej[r++] = (w << 6) + Long.numberOfTrailingZeros(x);
            x &= x - 1;
          }
        }
        sh.ids[p] = rej;
        size = listReject;
      } else {
        sh.kind[p] = BITS;
        long[] bs = new long[words];
        for (int i = 0; i < na; i++) bs[acc[i] >>> 6] |= 1L << acc[i];
        sh.bits[p] = bs;
        size = bitset;
      }
      sh.uncertain[p] = sortedCopy(unc, nu);
      return size + 4L * nu + 32;
    }
  }

  private static int[] sortedCopy(int[] a, int n) {
    int[] r = Arrays.copyOf(a, n);
    Arrays.sort(r);
    return r;
  }

  /** ORs the tokens accepted regardless of context at {@code state} into {@code mask}. */
  void orAccepted(int state, long[] mask, long[] universe) {
    switch (kind[state]) {
      case ACCEPT_LIST -> {
        for (int id : ids[state]) mask[id >>> 6] |= 1L << id;
      }
      case REJECT_LIST -> {
        int[] rej = ids[state];
        int[] unc = uncertain[state];
        // word by word: universe minus rejected minus uncertain
        int ri = 0;
        int ui = 0;
        for (int w = 0; w < universe.length; w++) {
          long x = universe[w];
          if (x == 0) continue;
          int limit = (w + 1) << 6;
          while (ri < rej.length && rej[ri] < limit) x &= ~(1L << rej[ri++]);
          while (ui < unc.length && unc[ui] < limit) x &= ~(1L << unc[ui++]);
          mask[w] |= x;
        }
      }
      default -> {
        long[] b = bits[state];
        for (int w = 0; w < b.length; w++) mask[w] |= b[w];
      }
    }
  }

  int[] uncertain(int state) {
    return uncertain[state];
  }

  /** Approximate heap footprint in bytes. */
  long bytes() {
    return bytes;
  }

  /** Tokens accepted at a state regardless of context (for tests and statistics). */
  int acceptedCount(int state, TokenVocabulary v) {
    return switch (kind[state]) {
      case ACCEPT_LIST -> ids[state].length;
      case REJECT_LIST -> v.universeCount() - ids[state].length - uncertain[state].length;
      default -> Arrays.stream(bits[state]).mapToInt(Long::bitCount).sum();
    };
  }
}
