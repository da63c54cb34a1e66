package dev.troupe.engine.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.engine.model.DType;
import dev.troupe.engine.model.InMemoryWeights;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * 8-bit weights ({@code --quantization q8_0}): the quantization against llama.cpp's Q8_0 rule
 * written out here in double precision, the products ({@link Q8Kernel}, its plain-Java form {@link
 * Q8Format#product}, OpenBLAS on dequantized tiles) against a double-precision loop over the
 * dequantized weights, batched rows against each row alone, and the BF16 tiles oneDNN is handed.
 */
class Q8ProductsTest {
  private final Random rnd = new Random(7);

  @Test
  void kernelRunsHere() {
    assertTrue(VectorSupport.AVAILABLE && Q8Kernel.supported(), "the Vector API form is tested");
  }

  @Test
  void quantizationFollowsLlamaCppsQ8_0() {
    int n = 32 * 40 + 7; // a partial last block
    float[] row = new float[n];
    for (int i = 0; i < n; i++)
      row[i] = (float) (rnd.nextGaussian() * Math.exp(rnd.nextInt(12) - 6));
    // edge blocks: all zeros; exact halves (d = 1: values k + 0.5 round away from zero); one value
    for (int i = 0; i < 32; i++) row[i] = 0;
    for (int i = 32; i < 64; i++) row[i] = (i % 2 == 0 ? 1 : -1) * (i - 32 + 0.5f);
    row[40] = 127;
    for (int i = 64; i < 96; i++) row[i] = i == 70 ? -3e-3f : 0;
    byte[] q = new byte[Q8Format.padded(n)];
    float[] d = new float[q.length / 32];
    Q8Format.quantize(row, n, q, d);
    for (int b = 0; b < d.length; b++) {
      double amax = 0;
      for (int i = 32 * b; i < Math.min(n, 32 * b + 32); i++)
        amax = Math.max(amax, Math.abs(row[i]));
      float scale = (float) amax / 127f;
      assertEquals(DType.f16ToFloat(DType.floatToF16(scale)), d[b], "block " + b + "'s F16 scale");
      for (int i = 32 * b; i < 32 * b + 32; i++) {
        if (i >= n) {
          assertEquals(0, q[i], "padding");
          continue;
        }
        // round(x / d) half away from zero, x / d taken as x times the float reciprocal
        float v = scale == 0 ? 0 : row[i] * (1f / scale);
        long want = (long) Math.signum(v) * (long) Math.floor(Math.abs((double) v) + 0.5);
        assertEquals(want, q[i], "element " + i + " (" + row[i] + ")");
      }
    }
    assertEquals(0f, d[0]);
    assertEquals(1f, d[1]);
    // halves away from zero, as C's roundf (Java's Math.round would take -1.5 to -1)
    assertEquals(1, q[32]); // 0.5
    assertEquals(-2, q[33]); // -1.5
    assertEquals(3, q[34]); // 2.5
    assertEquals(127, q[40]);
    assertEquals(-127, q[70]);
  }

  @Test
  void rowsReadBackAsTheirQuantizedValues() {
    int g = Matrix.GROUP;
    for (int out : new int[] {1, 5, g - 1, g, g + 3, 2 * g + 1})
      for (int in : new int[] {1, 31, 32, 33, 100}) {
        float[] src = random(out * in);
        Matrix m = matrix(src, out, in);
        float[] row = new float[in], src1 = new float[in];
        byte[] q = new byte[Q8Format.padded(in)];
        float[] d = new float[q.length / 32];
        for (int r = 0; r < out; r++) {
          System.arraycopy(src, r * in, src1, 0, in);
          Q8Format.quantize(src1, in, q, d);
          m.rowTo(r, row, 0);
          for (int i = 0; i < in; i++)
            assertEquals(
                q[i] * d[i / 32], row[i], "out=" + out + " in=" + in + " [" + r + "," + i + "]");
        }
      }
  }

  @Test
  void productsMatchDoublePrecisionOnOddShapes() {
    for (int out : new int[] {1, 3, 5, 13, 131})
      for (int in : new int[] {1, 2, 31, 32, 33, 100, 515})
        for (int rows : new int[] {1, 2, 3, 4, 5, 8, 9, 17, 64})
          check(matrix(random(out * in), out, in), rows);
  }

  @Test
  void batchedRowsEqualEachRowAloneThePlainJavaFormAndBlas() {
    int out = 301, in = 130;
    Matrix m = matrix(random(out * in), out, in);
    try (Blas blas = new Blas()) {
      for (int rows = 1; rows <= 70; rows = rows == 64 ? 70 : rows + 1) {
        float[] x = random(rows * in);
        float[] batched = new float[rows * out], scalar = new float[rows * out];
        m.product(x, rows, batched, out, 0, 0, out, false);
        Q8Format.product(
            x, rows, in, m.inPad(), m.q8(0), m.scales(0), 0, scalar, out, 0, 0, out, false);
        assertArrayEquals(batched, scalar, "plain Java = kernel, rows=" + rows);
        float[] gemm = new float[rows * out];
        if (rows % 11 == 5 || rows == 70) blas.product(m, x, rows, gemm, false, 0, out);
        for (int b = 0; b < rows; b++) {
          float[] alone = new float[out];
          m.product(Arrays.copyOfRange(x, b * in, (b + 1) * in), 1, alone, out, 0, 0, out, false);
          float[] row = Arrays.copyOfRange(batched, b * out, (b + 1) * out);
          assertArrayEquals(alone, row, "rows=" + rows + " row " + b);
          if (rows % 11 == 5 || rows == 70)
            assertArrayEquals(row, Arrays.copyOfRange(gemm, b * out, (b + 1) * out), 1e-3f, "BLAS");
        }
      }
    }
  }

  @Test
  void cacheBlockedProductsMatchRowByRow() {
    int out = 301, in = 2048; // a few rows outgrow L1: chunks of weight rows, 4 rows at a time
    Matrix m = matrix(random(out * in), out, in);
    for (int rows : new int[] {5, 8, 9, 13}) {
      check(m, rows);
      float[] x = random(rows * in), batched = new float[rows * out];
      m.product(x, rows, batched, out, 0, 0, out, false);
      for (int b = 0; b < rows; b++) {
        float[] alone = new float[out];
        m.product(Arrays.copyOfRange(x, b * in, (b + 1) * in), 1, alone, out, 0, 0, out, false);
        assertArrayEquals(
            alone, Arrays.copyOfRange(batched, b * out, (b + 1) * out), "rows=" + rows);
      }
    }
  }

  @Test
  void bf16GroupsAreTheDequantizedRowsRoundedInTheSixteenBitLayout() {
    int g = Matrix.GROUP, out = 2 * g + 9, in = 96, half = in / 2;
    Matrix m = matrix(random(out * in), out, in);
    int groups = (out - g + g - 1) / g; // rows [g, out): the second group and a partial third
    int[] ints = new int[groups * g * half];
    m.bf16Groups(0, g, out - g, ints);
    float[] row = new float[in];
    for (int r = g; r < groups * g + g; r++) {
      if (r < out) m.rowTo(r, row, 0);
      for (int k = 0; k < half; k++) {
        int v = ints[Matrix.tiled(r - g, k, half)];
        int lo = r < out ? DType.floatToBf16(row[2 * k]) & 0xffff : 0;
        int hi = r < out ? DType.floatToBf16(row[2 * k + 1]) & 0xffff : 0;
        assertEquals(lo | hi << 16, v, "row " + r + " pair " + k);
      }
    }
  }

  /** y against double precision over the dequantized weights, with add mode and cut ranges. */
  private void check(Matrix m, int rows) {
    int out = m.out, in = m.in;
    float[] w = new float[out * in];
    m.rowsTo(0, out, w);
    float[] x = random(rows * in), y = new float[rows * out], ya = new float[rows * out];
    Arrays.fill(y, Float.NaN);
    m.product(x, rows, y, out, 0, 0, out, false);
    Arrays.fill(ya, 1f);
    m.product(x, rows, ya, out, 0, 0, out, true);
    float[] y2 = new float[rows * out];
    int cut = Math.min(out, out / 3 | 1);
    m.product(x, rows, y2, out, 0, 0, cut, false);
    m.product(x, rows, y2, out, 0, cut, out, false);
    String shape = "rows=" + rows + " out=" + out + " in=" + in;
    assertArrayEquals(y, y2, shape + " cut");
    for (int b = 0; b < rows; b++)
      for (int o = 0; o < out; o++) {
        double s = 0, mag = 0;
        for (int i = 0; i < in; i++) {
          s += (double) x[b * in + i] * w[o * in + i];
          mag += Math.abs((double) x[b * in + i] * w[o * in + i]);
        }
        assertEquals(s, y[b * out + o], 1e-5 * (1 + mag), shape + " [" + b + "," + o + "]");
        assertEquals(s + 1, ya[b * out + o], 1e-5 * (1 + mag), shape + " add");
      }
  }

  private static Matrix matrix(float[] src, int out, int in) {
    Map<String, InMemoryWeights.Tensor> t = new LinkedHashMap<>();
    t.put("w", new InMemoryWeights.Tensor(src, new long[] {out, in}));
    return Matrix.load(new InMemoryWeights(t, "test"), DType.F32, true, List.of("w"));
  }

  private float[] random(int n) {
    float[] a = new float[n];
    for (int i = 0; i < n; i++) a[i] = rnd.nextFloat() * 2 - 1;
    return a;
  }
}
