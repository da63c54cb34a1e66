package dev.troupe.engine.cpu;

import java.util.Random;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;

/**
 * Per-shape timing of {@link Linear}'s two product paths (BLAS vs {@link DecodeKernels}) behind the
 * dispatch rule in docs/engine.md. Not a test (surefire runs {@code *Test} classes only); run it
 * with the test classpath, {@code --add-modules jdk.incubator.vector} and {@code
 * -Dtroupe.engine.kernelMinRows=1 -Dtroupe.engine.kernelMaxRows=64} so the kernel path takes every
 * row count (see docs/benchmarks.md).
 */
public final class DecodeKernelsBench {
  private DecodeKernelsBench() {}

  public static void main(String[] args) {
    // small model: qkv, gate/up, down, LM head; medium model: gate/up, down
    int[][] shapes = {
      {1024, 512}, {3072, 512}, {512, 1536}, {128256, 512}, {5632, 1024}, {1024, 2816}
    };
    int[] rowsList = {1, 2, 4, 8, 16, 24, 32};
    Random r = new Random(1);
    Linear.Scratch sc = new Linear.Scratch();
    for (int[] sh : shapes) {
      int out = sh[0], in = sh[1];
      float[] wh = new float[out * in];
      for (int i = 0; i < wh.length; i++) wh[i] = (float) r.nextGaussian();
      INDArray w = Nd4j.create(wh, new long[] {out, in}, DataType.FLOAT);
      Linear blas = new Linear(w, null), kern = new Linear(w, wh);
      for (int rows : rowsList) {
        float[] x = new float[rows * in];
        for (int i = 0; i < x.length; i++) x[i] = (float) r.nextGaussian();
        double tb = time(() -> blas.apply(sc, x, rows)), tk = time(() -> kern.apply(sc, x, rows));
        double gb = (double) out * in * 4 / 1e9;
        System.out.printf(
            "out=%6d in=%5d rows=%2d  blas %8.1f us (%5.1f GB/s)  kernel %8.1f us (%5.1f GB/s)  kernel/blas speed %.2fx%n",
            out, in, rows, tb * 1e6, gb / tb, tk * 1e6, gb / tk, tb / tk);
      }
      w.close();
    }
    System.exit(0);
  }

  private static double time(Runnable f) {
    for (int i = 0; i < 5; i++) f.run();
    double best = Double.MAX_VALUE;
    for (int rep = 0; rep < 5; rep++) {
      int n = 0;
      long t0 = System.nanoTime();
      do {
        f.run();
        n++;
      } while (System.nanoTime() - t0 < 40_000_000L);
      best = Math.min(best, (System.nanoTime() - t0) / 1e9 / n);
    }
    return best;
  }
}
