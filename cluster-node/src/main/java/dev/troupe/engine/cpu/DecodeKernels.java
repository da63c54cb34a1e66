package dev.troupe.engine.cpu;

import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.ForkJoinTask;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Small-batch products {@code Y [rows, out] = X [rows, in] · Wᵀ} with {@code W [out, in]} row-major
 * on the Java heap, for decode steps: each weight row is streamed from memory once for all batch
 * rows (OpenBLAS's GEMM with a transposed {@code W} and 2–32 rows runs far below memory speed, and
 * its GEMV reaches ~20 GB/s where the machine streams 35), with the output rows split across a
 * small persistent pool plus the calling thread. The inner loops are the Java Vector API ({@link
 * VectorProducts}).
 *
 * <p>Availability is decided once: the {@code jdk.incubator.vector} module must be in the boot
 * layer (JVM flag {@code --add-modules jdk.incubator.vector}) and {@code
 * -Dtroupe.engine.vectorKernels=false} not set; otherwise {@link #AVAILABLE} is false and {@link
 * Linear} keeps every product on BLAS. Which products come here is {@link Linear}'s dispatch rule
 * (docs/engine.md).
 */
final class DecodeKernels {
  private static final Logger log = LoggerFactory.getLogger(DecodeKernels.class);

  /** Below this many weight floats a product runs on the caller alone (a hand-off costs more). */
  private static final long PARALLEL_MIN_WEIGHTS = 1L << 16;

  private static final int THREADS = Math.max(1, Runtime.getRuntime().availableProcessors());

  /** Whether the Vector API kernels can run in this JVM (after THREADS: detect() logs it). */
  static final boolean AVAILABLE = detect();

  private static volatile ForkJoinPool pool;

  private DecodeKernels() {}

  private static boolean detect() {
    if (!Boolean.parseBoolean(System.getProperty("troupe.engine.vectorKernels", "true"))) {
      log.info(
          "vector decode kernels disabled by troupe.engine.vectorKernels=false; products use BLAS");
      return false;
    }
    if (ModuleLayer.boot().findModule("jdk.incubator.vector").isEmpty()) {
      log.info(
          "jdk.incubator.vector not in the JVM (add --add-modules jdk.incubator.vector); products use BLAS");
      return false;
    }
    try {
      // one tiny product with a tail, checked, so a broken or missing intrinsic setup fails here
      // once
      float[] x = {1, 2, 3}, w = {1, 1, 1, 2, 0, 1}, y = new float[2];
      VectorProducts.range(x, 1, 3, w, 2, y, 0, 2);
      if (y[0] != 6f || y[1] != 5f)
        throw new IllegalStateException("self-check gave " + y[0] + ", " + y[1]);
      log.info(
          "vector decode kernels on: {} float lanes, {} threads", VectorProducts.lanes(), THREADS);
      return true;
    } catch (Throwable t) { // LinkageError included: the module can be present but unusable
      log.warn("vector decode kernels unavailable ({}); products use BLAS", t.toString());
      return false;
    }
  }

  /**
   * {@code y [rows, out] = x [rows, in] · wᵀ}, {@code w [out, in]} row-major. Requires {@link
   * #AVAILABLE}. Output rows are split into {@link #THREADS} ranges (multiples of 4, the kernel's
   * block); the caller computes the first.
   */
  static void multiply(float[] x, int rows, int in, float[] w, int out, float[] y) {
    if (THREADS == 1 || (long) out * in < PARALLEL_MIN_WEIGHTS || out < 8) {
      VectorProducts.range(x, rows, in, w, out, y, 0, out);
      return;
    }
    int per = ((out + THREADS - 1) / THREADS + 3) & ~3;
    ForkJoinPool p = pool();
    ForkJoinTask<?>[] tasks = new ForkJoinTask<?>[THREADS];
    for (int t = 1; t < THREADS; t++) {
      int o0 = Math.min(out, t * per), o1 = Math.min(out, o0 + per);
      if (o0 < o1) tasks[t] = p.submit(() -> VectorProducts.range(x, rows, in, w, out, y, o0, o1));
    }
    VectorProducts.range(x, rows, in, w, out, y, 0, Math.min(out, per));
    for (int t = 1; t < THREADS; t++) if (tasks[t] != null) tasks[t].join();
  }

  private static ForkJoinPool pool() {
    ForkJoinPool p = pool;
    if (p == null) {
      synchronized (DecodeKernels.class) {
        p = pool;
        if (p == null) {
          // daemon workers (ForkJoinPool's default factory), idle ones retire after the pool's
          // keep-alive
          p = pool = new ForkJoinPool(Math.max(1, THREADS - 1));
        }
      }
    }
    return p;
  }
}
