package dev.troupe.engine.cpu;

import dev.troupe.engine.ComputeSettings;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A persistent team of threads that runs one program on every member at once (SPMD, as an OpenMP
 * parallel region): the caller is member 0, {@code size() − 1} daemon threads are the others, and
 * members meet at {@link #barrier}s between phases. A forward step is one region ({@link #run}), so
 * the threads are woken once per step rather than once per product, and each phase partitions its
 * work by member id, statically ({@link #share}) or piece by piece ({@link Claims}).
 *
 * <p>Waiting spins briefly ({@link #SPIN_NANOS}) and then parks, so an idle team and a member
 * waiting behind a long BLAS call (which runs on OpenBLAS's own threads) leave the cores to others.
 * One team per JVM ({@link #shared()}), as many members as cores; runners share it under a lock, so
 * two replicas in one JVM take turns instead of oversubscribing the cores. If a member throws, the
 * region is aborted: every member leaves at its next barrier and {@link #run} rethrows.
 */
final class Team {
  private static final Logger log = LoggerFactory.getLogger(Team.class);

  /** How long a waiting member spins before parking. */
  static final long SPIN_NANOS = ComputeSettings.jvm().cpuSpin().toNanos();

  private static volatile Team shared;

  /** A program run by every member; {@code member} in {@code [0, size)}. */
  interface Program {
    void run(int member);
  }

  private final int size;
  private final Thread[] threads; // [0] unused: the caller
  private final ReentrantLock lock = new ReentrantLock();
  private volatile Program program;
  private volatile int epoch; // bumped to start a region
  private final AtomicInteger done = new AtomicInteger();
  private volatile Thread caller;
  private volatile Throwable failure;

  // barrier: sense-reversing counter
  private final AtomicInteger arrived = new AtomicInteger();
  private volatile int generation;

  private Team(int size) {
    this.size = size;
    this.threads = new Thread[size];
    for (int m = 1; m < size; m++) {
      int member = m;
      Thread t = new Thread(() -> loop(member), "troupe-cpu-team-" + m);
      t.setDaemon(true);
      threads[m] = t;
      t.start();
    }
  }

  /**
   * The JVM's team: one member per available core ({@code troupe.worker.compute.cpu-threads}
   * overrides).
   */
  static Team shared() {
    Team t = shared;
    if (t == null) {
      synchronized (Team.class) {
        t = shared;
        if (t == null) {
          int n = ComputeSettings.jvm().teamSize();
          t = shared = new Team(Math.max(1, n));
          log.info("CPU runner team: {} threads", n);
        }
      }
    }
    return t;
  }

  int size() {
    return size;
  }

  /** Runs {@code p} on every member (the caller is member 0) and returns when all have finished. */
  void run(Program p) {
    lock.lock();
    try {
      failure = null;
      caller = Thread.currentThread();
      done.set(0);
      program = p;
      epoch++; // publishes program
      for (int m = 1; m < size; m++) LockSupport.unpark(threads[m]);
      try {
        p.run(0);
      } catch (Aborted a) {
        // another member failed; its failure is rethrown below
      } catch (Throwable e) {
        abort(e);
      }
      // wait for the others
      long spinUntil = System.nanoTime() + SPIN_NANOS;
      while (done.get() < size - 1) {
        if (System.nanoTime() < spinUntil) Thread.onSpinWait();
        else LockSupport.parkNanos(this, 100_000);
      }
      program = null;
      Throwable f = failure;
      if (f != null) {
        resetBarrier();
        if (f instanceof RuntimeException r) throw r;
        if (f instanceof Error err) throw err;
        throw new IllegalStateException(f);
      }
    } finally {
      lock.unlock();
    }
  }

  /** Waits until every member has reached this barrier (a phase boundary). */
  void barrier() {
    if (size == 1) return;
    int gen = generation;
    if (arrived.incrementAndGet() == size) {
      arrived.set(0);
      generation = gen + 1;
      wakeAll();
      return;
    }
    long spinUntil = System.nanoTime() + SPIN_NANOS;
    while (generation == gen) {
      if (failure != null) throw new Aborted();
      if (System.nanoTime() < spinUntil) Thread.onSpinWait();
      else LockSupport.parkNanos(this, 50_000);
    }
  }

  private void wakeAll() {
    Thread c = caller;
    if (c != null) LockSupport.unpark(c);
    for (int m = 1; m < size; m++) LockSupport.unpark(threads[m]);
  }

  private void abort(Throwable e) {
    synchronized (this) {
      if (failure == null) failure = e;
    }
    wakeAll();
  }

  private void resetBarrier() {
    arrived.set(0);
    generation++;
  }

  private void loop(int member) {
    int seen = 0;
    while (true) {
      long spinUntil = System.nanoTime() + SPIN_NANOS;
      while (epoch == seen) {
        if (System.nanoTime() < spinUntil) Thread.onSpinWait();
        else LockSupport.park(this);
      }
      seen = epoch;
      Program p = program;
      try {
        if (p != null) p.run(member);
      } catch (Aborted a) {
        // the failing member recorded the cause
      } catch (Throwable e) {
        abort(e);
      }
      done.incrementAndGet();
      Thread c = caller;
      if (c != null) LockSupport.unpark(c);
    }
  }

  /** Thrown out of {@link #barrier} in members of an aborted region. */
  static final class Aborted extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Aborted() {
      super("team region aborted", null, false, false);
    }
  }

  /**
   * Work handed out piece by piece within a region, with stealing: each counter's {@code n} pieces
   * start as the members' {@link #share}s; a member takes its own pieces front to back, then the
   * others' remaining ones from their backs. A member that the machine slows (a core shared with
   * another process, a late wake-up) thus leaves its rest to the others instead of holding them all
   * at the next barrier, while each member still streams through consecutive memory: taking pieces
   * round-robin from one counter cost about 1 µs per piece in restarted hardware prefetch streams
   * (the small model's LM head at batch 1: 2.0 ms in halves, 3.0 ms in pieces of 128 rows, 4.5 ms
   * in pieces of 32), docs/engine.md.
   */
  static final class Claims {
    private static final int PAD = 8; // one range per 64-byte cache line
    private static final long SET = 1L << 62; // a range packs SET | next << 31 | end; 0: unset
    private final int members;
    private AtomicLongArray ranges = new AtomicLongArray(0);

    Claims(int members) {
      this.members = members;
    }

    /** Unsets counters {@code [0, n)}; only outside a region ({@link #run} publishes them). */
    void reset(int n) {
      if (ranges.length() < n * members * PAD) ranges = new AtomicLongArray(n * members * PAD);
      for (int i = 0; i < n * members; i++) ranges.set(i * PAD, 0);
    }

    /**
     * Member {@code m}'s next piece of counter {@code i}, which has {@code n} pieces in all, or -1
     * when every piece is taken.
     */
    int claim(int i, int m, int n) {
      int p = take(i, m, n, true);
      for (int k = 1; p < 0 && k < members; k++) p = take(i, (m + k) % members, n, false);
      return p;
    }

    /** A piece from the front ({@code own}) or the back of member {@code v}'s range. */
    private int take(int i, int v, int n, boolean own) {
      int at = (i * members + v) * PAD;
      while (true) {
        long r = ranges.get(at);
        if (r == 0) { // first touch: the member's share, whoever comes first
          int[] sh = share(n, members, v, 1);
          ranges.compareAndSet(at, 0, SET | (long) sh[0] << 31 | sh[1]);
          continue;
        }
        int next = (int) (r >>> 31) & Integer.MAX_VALUE, end = (int) r & Integer.MAX_VALUE;
        if (next >= end) return -1;
        long taken = own ? SET | (long) (next + 1) << 31 | end : SET | (long) next << 31 | end - 1;
        if (ranges.compareAndSet(at, r, taken)) return own ? next : end - 1;
      }
    }
  }

  /**
   * {@code [from, to)} of member {@code m}'s share of {@code n} items in blocks of {@code align}.
   */
  static int[] share(int n, int members, int m, int align) {
    int blocks = (n + align - 1) / align;
    int per = blocks / members, extra = blocks % members;
    int b0 = m * per + Math.min(m, extra), b1 = b0 + per + (m < extra ? 1 : 0);
    return new int[] {Math.min(n, b0 * align), Math.min(n, b1 * align)};
  }
}
