package dev.troupe.engine.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;
import org.junit.jupiter.api.Test;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.factory.Nd4j;

/** {@link DecodeKernels} against a plain double-precision loop, and {@link Linear}'s two paths. */
class DecodeKernelsTest {
  private final Random rnd = new Random(42);

  @Test
  void vectorModuleIsOnInTests() {
    // the surefire argLine adds jdk.incubator.vector; without it every kernel test below would be
    // moot
    assertTrue(
        DecodeKernels.AVAILABLE,
        "DecodeKernels unavailable: is --add-modules jdk.incubator.vector set?");
  }

  @Test
  void matchesScalarLoopOnOddShapes() {
    int[] rowsList = {1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 33};
    int[] outs = {1, 3, 4, 5, 7, 8, 13, 131, 1000}; // 131·515 and 1000·515 take the 2-thread path
    int[] ins = {1, 3, 15, 16, 17, 33, 100, 512, 515};
    for (int rows : rowsList) for (int out : outs) for (int in : ins) check(rows, out, in);
  }

  private void check(int rows, int out, int in) {
    float[] x = random(rows * in), w = random(out * in);
    float[] y = new float[rows * out];
    java.util.Arrays.fill(y, Float.NaN); // every element must be written
    DecodeKernels.multiply(x, rows, in, w, out, y);
    for (int b = 0; b < rows; b++)
      for (int o = 0; o < out; o++) {
        double s = 0, mag = 0;
        for (int i = 0; i < in; i++) {
          s += (double) x[b * in + i] * w[o * in + i];
          mag += Math.abs((double) x[b * in + i] * w[o * in + i]);
        }
        float got = y[b * out + o];
        assertEquals(
            s,
            got,
            1e-5 * (1 + mag),
            "rows=" + rows + " out=" + out + " in=" + in + " at [" + b + "," + o + "]");
      }
  }

  @Test
  void linearKernelAndBlasPathsAgree() {
    int out = 301, in = 129;
    float[] w = random(out * in);
    try (Linear kern = new Linear(Nd4j.create(w, new long[] {out, in}, DataType.FLOAT), w.clone());
        Linear blas = new Linear(Nd4j.create(w, new long[] {out, in}, DataType.FLOAT), null)) {
      Linear.Scratch scratch = new Linear.Scratch();
      try {
        for (int rows : new int[] {1, 2, 5, 16, 17, 40}) {
          float[] x = random(rows * in);
          assertArrayEquals(
              blas.apply(scratch, x, rows), kern.apply(scratch, x, rows), 1e-4f, "rows=" + rows);
          float[][] a = blas.applyRows(scratch, x, rows), b = kern.applyRows(scratch, x, rows);
          for (int r = 0; r < rows; r++)
            assertArrayEquals(a[r], b[r], 1e-4f, "rows=" + rows + " row " + r);
        }
      } finally {
        scratch.close();
      }
    }
  }

  private float[] random(int n) {
    float[] a = new float[n];
    for (int i = 0; i < n; i++) a[i] = rnd.nextFloat() * 2 - 1;
    return a;
  }
}
