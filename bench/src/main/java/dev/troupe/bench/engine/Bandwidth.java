package dev.troupe.bench.engine;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * Read bandwidth: two threads summing disjoint halves of a 256 MiB array, best of several passes.
 */
final class Bandwidth {
  private Bandwidth() {}

  static double measureGBs() throws Exception {
    int threads = Math.min(2, Runtime.getRuntime().availableProcessors());
    int n = 1 << 26; // 256 MiB of floats
    float[] a = new float[n];
    for (int i = 0; i < n; i += 1024) a[i] = i;
    ExecutorService ex = Executors.newFixedThreadPool(threads);
    try {
      double best = 0;
      for (int pass = 0; pass < 5; pass++) {
        long s = System.nanoTime();
        Future<?>[] f = new Future<?>[threads];
        for (int t = 0; t < threads; t++) {
          int from = (int) ((long) n * t / threads), to = (int) ((long) n * (t + 1) / threads);
          f[t] = ex.submit(() -> sum(a, from, to));
        }
        double total = 0;
        for (Future<?> x : f) total += (Float) x.get();
        double gbs = (long) n * 4 / ((System.nanoTime() - s) / 1e9) / 1e9;
        if (total == 42) System.out.print(""); // keep the sums live
        best = Math.max(best, gbs);
      }
      return best;
    } finally {
      ex.shutdown();
    }
  }

  private static float sum(float[] a, int from, int to) {
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
    int i = from;
    for (; i + 7 < to; i += 8) {
      s0 += a[i];
      s1 += a[i + 1];
      s2 += a[i + 2];
      s3 += a[i + 3];
      s4 += a[i + 4];
      s5 += a[i + 5];
      s6 += a[i + 6];
      s7 += a[i + 7];
    }
    for (; i < to; i++) s0 += a[i];
    return s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7;
  }
}
