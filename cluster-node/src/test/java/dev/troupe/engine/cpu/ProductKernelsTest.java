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
import jdk.incubator.vector.IntVector;
import org.junit.jupiter.api.Test;

/**
 * The product kernels ({@link Bf16Kernel}, {@link F16Kernel}, {@link Vec32}, the plain-Java
 * fallbacks, {@link Blas} on converted tiles) against a double-precision loop over the weights'
 * exact values, and against each other: every row count 1–64 gives each row the same result as
 * alone.
 */
class ProductKernelsTest {
  private final Random rnd = new Random(42);

  @Test
  void vectorModuleIsOnInTests() {
    // the surefire argLine adds jdk.incubator.vector; without it the kernel tests below are moot
    assertTrue(VectorSupport.AVAILABLE, "is --add-modules jdk.incubator.vector set?");
  }

  @Test
  void f16WideningIsExactForAllFiniteBitPatterns() {
    int lanes = IntVector.SPECIES_PREFERRED.length();
    int[] bits = new int[lanes];
    float[] got = new float[lanes];
    for (int base = 0; base < 1 << 16; base += lanes) {
      for (int i = 0; i < lanes; i++) bits[i] = base + i;
      F16Kernel.f16(IntVector.fromArray(IntVector.SPECIES_PREFERRED, bits, 0)).intoArray(got, 0);
      for (int i = 0; i < lanes; i++) {
        float want = DType.f16ToFloat((short) bits[i]);
        if (!Float.isInfinite(want) && !Float.isNaN(want))
          assertEquals(
              Float.floatToRawIntBits(want),
              Float.floatToRawIntBits(got[i]),
              "pattern 0x" + Integer.toHexString(bits[i]));
      }
    }
  }

  @Test
  void f16InfinityOrNanIsRefusedAtLoad() {
    Map<String, InMemoryWeights.Tensor> t = new LinkedHashMap<>();
    float[] v = random(6);
    v[3] = Float.POSITIVE_INFINITY;
    t.put("w", new InMemoryWeights.Tensor(v, new long[] {2, 3}));
    var e =
        org.junit.jupiter.api.Assertions.assertThrows(
            dev.troupe.engine.model.ModelLoadException.class,
            () -> Matrix.load(new InMemoryWeights(t, "test"), DType.F16, List.of("w")));
    assertTrue(e.getMessage().contains("tensor w holds an infinity or NaN"), e.getMessage());
    // BF16 keeps its exponent range: the same tensor loads
    Matrix.load(new InMemoryWeights(t, "test"), DType.BF16, List.of("w"));
  }

  @Test
  void tiledRowsReadBackAsTheTensorRoundedToTheirDtype() {
    // the layout is internal: every row must read back as the source row, whatever the shape
    // (a partial last group, one or more whole groups, even and odd widths)
    int g = Matrix.GROUP;
    int[] outs = {1, 3, 4, 6, 9, g - 1, g, g + 5, 2 * g + 1};
    int[] ins = {1, 2, 3, 30, 32, 33, 70, 71};
    for (DType dt : new DType[] {DType.BF16, DType.F16})
      for (int out : outs)
        for (int in : ins) {
          float[] src = random(out * in);
          Map<String, InMemoryWeights.Tensor> t = new LinkedHashMap<>();
          t.put("w", new InMemoryWeights.Tensor(src, new long[] {out, in}));
          Matrix m = Matrix.load(new InMemoryWeights(t, "test"), dt, List.of("w"));
          float[] row = new float[in];
          for (int r = 0; r < out; r++) {
            m.rowTo(r, row, 0);
            for (int i = 0; i < in; i++) {
              float v = src[r * in + i];
              float want =
                  dt == DType.BF16
                      ? DType.bf16ToFloat(DType.floatToBf16(v))
                      : DType.f16ToFloat(DType.floatToF16(v));
              assertEquals(
                  want, row[i], dt + " out=" + out + " in=" + in + " [" + r + "," + i + "]");
            }
          }
        }
  }

  @Test
  void everyDtypeMatchesDoublePrecisionOnOddShapes() {
    int[] rowsList = {1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 33, 64};
    int[] outs = {1, 3, 4, 5, 8, 13, 131};
    int[] ins = {1, 2, 3, 15, 16, 32, 33, 100, 515};
    for (DType dt : DType.values())
      for (int out : outs)
        for (int in : ins) {
          Matrix m = matrix(dt, out, in);
          float[] w = exact(m);
          for (int rows : rowsList) check(m, w, rows);
        }
  }

  private void check(Matrix m, float[] w, int rows) {
    int out = m.out, in = m.in;
    boolean packed = m.packed();
    int xs = m.xStride();
    float[] x = random(rows * in), xl = new float[rows * xs];
    for (int b = 0; b < rows; b++) Activations.put(x, b * in, in, xl, b * xs, packed);
    float[] y = new float[rows * out], ys = new float[rows * out], ya = new float[rows * out];
    Arrays.fill(y, Float.NaN); // every element must be written
    m.product(xl, rows, y, out, 0, 0, out, false);
    // the plain-Java fallback of the same layout
    if (packed)
      Scalar16.range(
          m.dtype == DType.F16, xl, rows, (in + 1) / 2, m.ints(0), 0, ys, out, 0, 0, out, false);
    // add mode on top of ones
    Arrays.fill(ya, 1f);
    m.product(xl, rows, ya, out, 0, 0, out, true);
    // the same range in two parts cut inside a group (as members' pieces may be): the same bits
    float[] y2 = new float[rows * out];
    int cut = Math.min(out, out / 3 | 1);
    m.product(xl, rows, y2, out, 0, 0, cut, false);
    m.product(xl, rows, y2, out, 0, cut, out, false);
    assertArrayEquals(y, y2, m.dtype + " rows=" + rows + " out=" + out + " in=" + in + " cut");
    for (int b = 0; b < rows; b++)
      for (int o = 0; o < out; o++) {
        double s = 0, mag = 0;
        for (int i = 0; i < in; i++) {
          s += (double) x[b * in + i] * w[o * in + i];
          mag += Math.abs((double) x[b * in + i] * w[o * in + i]);
        }
        String at =
            m.dtype + " rows=" + rows + " out=" + out + " in=" + in + " [" + b + "," + o + "]";
        double tol = 1e-5 * (1 + mag);
        assertEquals(s, y[b * out + o], tol, at);
        if (packed) assertEquals(s, ys[b * out + o], tol, at + " scalar");
        assertEquals(s + 1, ya[b * out + o], tol, at + " add");
      }
  }

  @Test
  void batchedRowsEqualEachRowAloneAndBlasTilesAgree() {
    for (DType dt : DType.values()) {
      int out = 301, in = 130;
      Matrix m = matrix(dt, out, in);
      int xs = m.xStride();
      try (Blas blas = new Blas()) {
        // every row count of the kernel path (full 4-row groups and each tail), then BLAS
        for (int rows = 2; rows <= 70; rows = rows == 64 ? 70 : rows + 1) {
          float[] x = random(rows * in), xl = new float[rows * xs];
          for (int b = 0; b < rows; b++) Activations.put(x, b * in, in, xl, b * xs, m.packed());
          float[] batched = new float[rows * out], gemm = new float[rows * out];
          float[] scalar = new float[rows * out];
          m.product(xl, rows, batched, out, 0, 0, out, false);
          // BLAS at a few row counts, in two output ranges as two members run it: the first
          // added to what y held, the second stored over it
          boolean viaBlas = rows == 2 || rows == 5 || rows == 31 || rows == 64 || rows == 70;
          float[] base = random(rows * out);
          int split = 157;
          if (viaBlas) {
            System.arraycopy(base, 0, gemm, 0, gemm.length);
            blas.product(m, x, rows, gemm, true, 0, split);
            blas.product(m, x, rows, gemm, false, split, out);
            for (int b = 0; b < rows; b++)
              for (int j = 0; j < split; j++) gemm[b * out + j] -= base[b * out + j];
          }
          if (m.packed())
            Scalar16.range(
                dt == DType.F16,
                xl,
                rows,
                (in + 1) / 2,
                m.ints(0),
                0,
                scalar,
                out,
                0,
                0,
                out,
                false);
          for (int b = 0; b < rows; b++) {
            float[] alone = new float[out], scalarAlone = new float[out];
            float[] xb = Arrays.copyOfRange(xl, b * xs, (b + 1) * xs);
            m.product(xb, 1, alone, out, 0, 0, out, false);
            float[] row = Arrays.copyOfRange(batched, b * out, (b + 1) * out);
            // the same kernel, the same summation order: bit-identical
            assertArrayEquals(alone, row, dt + " rows=" + rows + " row " + b);
            if (viaBlas)
              assertArrayEquals(
                  row, Arrays.copyOfRange(gemm, b * out, (b + 1) * out), 1e-4f, dt + " BLAS");
            if (m.packed()) {
              // and the plain-Java fallback (no Vector API) likewise
              Scalar16.range(
                  dt == DType.F16,
                  xb,
                  1,
                  (in + 1) / 2,
                  m.ints(0),
                  0,
                  scalarAlone,
                  out,
                  0,
                  0,
                  out,
                  false);
              assertArrayEquals(
                  scalarAlone,
                  Arrays.copyOfRange(scalar, b * out, (b + 1) * out),
                  dt + " scalar rows=" + rows + " row " + b);
              // the same fused multiply-adds in the same order as the kernels: the same bits
              assertArrayEquals(alone, scalarAlone, dt + " scalar = kernel, rows=" + rows);
            }
          }
        }
      }
    }
  }

  /**
   * Both orders of BF16 addition ({@link Scalar16#tileOrder}: {@code vdpbf16ps}'s, AMX's), on any
   * machine: the kernels give each row its bits alone, the plain-Java fallback's, and a reference
   * written here from the instructions' definitions (per chunk of 512 inputs one sum; {@code
   * vdpbf16ps}: a chain over the pairs, odd product first; {@code tdpbf16ps}: per 32 inputs an even
   * chain and an odd chain from zero, then sum + (even + odd)) — a partial first block, partial
   * groups, a short last chunk, 1–9 rows (the tile order's blocks of 2 and each tail) and 17.
   */
  @Test
  void bothBf16AdditionOrdersAreTheirDefinitions() {
    for (int[] sh : new int[][] {{301, 130}, {150, 1088}}) {
      int out = sh[0], in = sh[1], half = in / 2;
      Matrix m = matrix(DType.BF16, out, in);
      float[] w = exact(m);
      int xs = m.xStride();
      for (boolean tiles : new boolean[] {false, true})
        for (int rows : new int[] {1, 2, 3, 4, 5, 6, 7, 8, 9, 17}) {
          float[] x = random(rows * in), xl = new float[rows * xs];
          for (int b = 0; b < rows; b++) Activations.put(x, b * in, in, xl, b * xs, true);
          float[] batched = new float[rows * out], scalar = new float[rows * out];
          Bf16Kernel.range(tiles, xl, rows, half, m.ints(0), 0, batched, out, 0, 0, out, false);
          Scalar16.range(false, tiles, xl, rows, half, m.ints(0), 0, scalar, out, 0, 0, out, false);
          String what = in + " inputs, " + (tiles ? "AMX" : "vdpbf16ps") + ", rows=" + rows;
          assertArrayEquals(scalar, batched, what + ": kernels = plain Java");
          for (int b = 0; b < rows; b++) {
            float[] alone = new float[out], want = new float[out];
            float[] xb = Arrays.copyOfRange(xl, b * xs, (b + 1) * xs);
            Bf16Kernel.range(tiles, xb, 1, half, m.ints(0), 0, alone, out, 0, 0, out, false);
            assertArrayEquals(alone, Arrays.copyOfRange(batched, b * out, (b + 1) * out), what);
            for (int o = 0; o < out; o++) want[o] = definition(tiles, x, b * in, w, o * in, in);
            assertArrayEquals(want, alone, what + ", row " + b + ": the definition");
          }
        }
    }
  }

  /** Row x · row w summed as the instruction that {@code tiles} names does it. */
  private static float definition(boolean tiles, float[] x, int xi, float[] w, int wi, int in) {
    float total = 0;
    for (int c = 0; c < in; c += 512) {
      float sum = 0;
      int end = Math.min(in, c + 512);
      if (tiles)
        for (int t = c; t < end; t += 32) {
          float even = 0, odd = 0;
          for (int i = t; i < Math.min(end, t + 32); i += 2) {
            even = Math.fma(w[wi + i], x[xi + i], even);
            odd = Math.fma(w[wi + i + 1], x[xi + i + 1], odd);
          }
          sum += even + odd;
        }
      else
        for (int i = c; i < end; i += 2)
          sum = Math.fma(w[wi + i], x[xi + i], Math.fma(w[wi + i + 1], x[xi + i + 1], sum));
      total = c == 0 ? sum : total + sum;
    }
    return total;
  }

  @Test
  void cacheBlockedProductsMatchRowByRow() {
    // wide rows: a few activation rows outgrow L1, so the kernel walks the weights in chunks of
    // rows (several here, the last one partial) and the activations 4 rows at a time
    for (DType dt : new DType[] {DType.BF16, DType.F16}) {
      int out = 301, in = 2048;
      Matrix m = matrix(dt, out, in);
      float[] w = exact(m);
      int xs = m.xStride();
      for (int rows : new int[] {5, 8, 9, 13}) {
        check(m, w, rows);
        float[] x = random(rows * in), xl = new float[rows * xs];
        for (int b = 0; b < rows; b++) Activations.put(x, b * in, in, xl, b * xs, true);
        float[] batched = new float[rows * out];
        m.product(xl, rows, batched, out, 0, 0, out, false);
        for (int b = 0; b < rows; b++) {
          float[] alone = new float[out];
          m.product(Arrays.copyOfRange(xl, b * xs, (b + 1) * xs), 1, alone, out, 0, 0, out, false);
          assertArrayEquals(
              alone, Arrays.copyOfRange(batched, b * out, (b + 1) * out), dt + " rows=" + rows);
        }
      }
    }
  }

  @Test
  void gateUpInterleavingMapsBack() {
    int inter = 40, in = 6, block = 16;
    Map<String, InMemoryWeights.Tensor> t = new LinkedHashMap<>();
    float[] g = new float[inter * in], u = new float[inter * in];
    for (int i = 0; i < g.length; i++) {
      g[i] = i / in; // row index
      u[i] = -1 - i / in;
    }
    t.put("g", new InMemoryWeights.Tensor(g, new long[] {inter, in}));
    t.put("u", new InMemoryWeights.Tensor(u, new long[] {inter, in}));
    Matrix m =
        Matrix.loadInterleaved(new InMemoryWeights(t, "test"), DType.F32, false, "g", "u", block);
    float[] row = new float[in];
    for (int f = 0; f < 2 * inter; f++) {
      m.rowTo(f, row, 0);
      assertEquals(Matrix.gateUpRow(f, inter, block), (int) row[0], "fused row " + f);
    }
  }

  private Matrix matrix(DType dt, int out, int in) {
    Map<String, InMemoryWeights.Tensor> t = new LinkedHashMap<>();
    t.put("w", new InMemoryWeights.Tensor(random(out * in), new long[] {out, in}));
    return Matrix.load(new InMemoryWeights(t, "test"), dt, List.of("w"));
  }

  /** The matrix's values as held (rounded to its dtype). */
  private static float[] exact(Matrix m) {
    float[] w = new float[m.out * m.in];
    m.rowsTo(0, m.out, w);
    return w;
  }

  private float[] random(int n) {
    float[] a = new float[n];
    for (int i = 0; i < n; i++) a[i] = rnd.nextFloat() * 2 - 1;
    return a;
  }
}
