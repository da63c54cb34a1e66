package dev.troupe.engine.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.engine.ComputeSettings;
import dev.troupe.engine.ModelRunner;
import dev.troupe.engine.model.DType;
import dev.troupe.engine.model.InMemoryWeights;
import dev.troupe.engine.model.ModelConfigs;
import dev.troupe.engine.model.SafetensorsWeights;
import dev.troupe.engine.model.WeightSource;
import dev.troupe.engine.runner.ModelRunners;
import dev.troupe.engine.testing.ScalarReferenceModel;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.SplittableRandom;
import org.bytedeco.dnnl.engine;
import org.bytedeco.dnnl.memory;
import org.bytedeco.dnnl.reorder;
import org.bytedeco.dnnl.stream;
import org.bytedeco.javacpp.FloatPointer;
import org.bytedeco.javacpp.LongPointer;
import org.bytedeco.javacpp.ShortPointer;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * oneDNN's BF16 matmul ({@link Bf16Gemm}, the prefill path of BF16 weights on a CPU with BF16
 * dot-product instructions), where this machine has them (skipped with the reason elsewhere):
 * products against a double-precision sum over the same BF16-rounded activations, and a whole
 * model's prefill against PyTorch's logits and against the scalar reference that rounds its product
 * inputs the same way.
 */
class Bf16GemmTest {

  @BeforeAll
  static void needsHardware() {
    Assumptions.assumeTrue(
        Bf16Gemm.available(), "no BF16 matmul hardware through oneDNN here (see the log)");
  }

  @Test
  void productsMatchASumOverBf16Activations() {
    Random r = new Random(5);
    int[][] shapes = { // rows, in, out
      {65, 32, 1}, {65, 64, 63}, {100, 64, 64}, {70, 96, 130}, {257, 544, 200}, {65, 544, 9000}
    };
    try (Bf16Gemm gemm = new Bf16Gemm()) {
      for (int[] sh : shapes)
        for (boolean add : new boolean[] {false, true}) {
          int rows = sh[0], in = sh[1], out = sh[2];
          float[] w = new float[out * in], x = new float[rows * in], y = new float[rows * out];
          for (int i = 0; i < w.length; i++) w[i] = bf16((float) r.nextGaussian() * 0.05f);
          for (int i = 0; i < x.length; i++) x[i] = (float) r.nextGaussian();
          for (int i = 0; i < y.length; i++) y[i] = add ? (float) r.nextGaussian() : Float.NaN;
          float[] y0 = y.clone();
          Matrix m = matrix(w, out, in);
          assertTrue(Bf16Gemm.handles(m));
          gemm.product(m, x, rows, y, add);
          for (int t = 0; t < rows; t++)
            for (int o = 0; o < out; o++) {
              double s = add ? y0[t * out + o] : 0, mag = Math.abs(s);
              for (int i = 0; i < in; i++) {
                double p = (double) bf16(x[t * in + i]) * w[o * in + i];
                s += p;
                mag += Math.abs(p);
              }
              double got = y[t * out + o];
              assertTrue(
                  Math.abs(got - s) <= 1e-5 * (1 + mag),
                  Arrays.toString(sh)
                      + " add "
                      + add
                      + " row "
                      + t
                      + " out "
                      + o
                      + ": "
                      + got
                      + " vs "
                      + s);
            }
        }
    }
  }

  /**
   * Weights kept in native memory (the resident budget) give the same bits as weights copied at
   * every product, tile by tile; a matrix that would pass the budget is not kept, the ones before
   * it are.
   */
  @Test
  void residentWeightsGiveTheCopiedWeightsBits() {
    Random r = new Random(17);
    int[][] shapes = {{128, 300}, {544, 9000}, {96, 64}}; // in, out
    Matrix[] ms = new Matrix[shapes.length];
    for (int i = 0; i < shapes.length; i++) {
      float[] w = new float[shapes[i][0] * shapes[i][1]];
      for (int k = 0; k < w.length; k++) w[k] = (float) r.nextGaussian() * 0.05f;
      ms[i] = matrix(w, shapes[i][1], shapes[i][0]);
    }
    // room for the first matrix only: the second would pass it, the third then still fits
    long budget = ms[0].bytes() + ms[2].bytes();
    try (Bf16Gemm copying = new Bf16Gemm(0);
        Bf16Gemm keeping = new Bf16Gemm(budget)) {
      for (int round = 0; round < 2; round++)
        for (Matrix m : ms)
          for (int rows : new int[] {1, 65}) {
            float[] x = new float[rows * m.in], a = new float[rows * m.out];
            for (int i = 0; i < x.length; i++) x[i] = (float) r.nextGaussian();
            float[] b = a.clone();
            copying.product(m, x, rows, a, true);
            keeping.product(m, x, rows, b, true);
            assertArrayEquals(a, b, "out " + m.out + ", " + rows + " rows");
          }
      assertEquals(0, copying.residentBytes());
      assertEquals(budget, keeping.residentBytes(), "the first and the third kept, not the second");
    }
  }

  /**
   * An 8-bit matrix ({@code --quantization q8_0}) runs as the BF16 matrix of its dequantized values
   * rounded to BF16: the same bits, its BF16 form kept resident or made tile by tile at each call;
   * resident, it counts its BF16 bytes against the budget.
   */
  @Test
  void eightBitMatricesRunAsTheirBf16Form() {
    Random r = new Random(23);
    int[][] shapes = {{128, 300}, {544, 9000}, {96, 64}}; // in, out
    for (int[] shape : shapes) {
      int in = shape[0], out = shape[1];
      float[] w = new float[in * out];
      for (int k = 0; k < w.length; k++) w[k] = (float) r.nextGaussian() * 0.05f;
      var src = new InMemoryWeights(Map.of("w", tensor(w, out, in)), "test");
      Matrix q8 = Matrix.load(src, DType.BF16, true, List.of("w"));
      assertTrue(Bf16Gemm.handles(q8));
      float[] deq = new float[in * out];
      q8.rowsTo(0, out, deq);
      Matrix bf16 = matrix(deq, out, in); // each value rounded to BF16 as it loads
      try (Bf16Gemm copying = new Bf16Gemm(0);
          Bf16Gemm keeping = new Bf16Gemm(1L << 30);
          Bf16Gemm reference = new Bf16Gemm(0)) {
        for (int rows : new int[] {1, 65}) {
          float[] x = new float[rows * in], want = new float[rows * out];
          for (int i = 0; i < x.length; i++) x[i] = (float) r.nextGaussian();
          float[] a = want.clone(), b = want.clone();
          reference.product(bf16, x, rows, want, false);
          copying.product(q8, x, rows, a, false);
          keeping.product(q8, x, rows, b, false);
          assertArrayEquals(want, a, "out " + out + ", " + rows + " rows, tile by tile");
          assertArrayEquals(want, b, "out " + out + ", " + rows + " rows, resident");
        }
        assertEquals(bf16.bytes(), keeping.residentBytes(), "its BF16 bytes");
      }
    }
  }

  /**
   * A row's result is the same bits whatever the number of rows in the call (1, 3, 7, 70) and where
   * it stands among them: the runner sends every prompt row to oneDNN, however many the step holds,
   * so a prompt's keys and values must not depend on what else is in the step. (One oneDNN call
   * over a reduction of 1,536 or 2,816 inputs summed in blocks of 512 for 1–3 rows and of 1,024 for
   * more: hence one call per chunk of 512.)
   */
  @Test
  void aRowsResultDoesNotDependOnTheRowsBesideIt() {
    Random r = new Random(11);
    int[][] shapes = {{128, 384}, {544, 300}, {128, 9000}, {1536, 200}, {2816, 130}}; // in, out
    try (Bf16Gemm gemm = new Bf16Gemm()) {
      for (int[] sh : shapes)
        for (boolean add : new boolean[] {false, true}) {
          int in = sh[0], out = sh[1], rows = 70;
          float[] w = new float[out * in], x = new float[rows * in], y0 = new float[rows * out];
          for (int i = 0; i < w.length; i++) w[i] = (float) r.nextGaussian() * 0.05f;
          for (int i = 0; i < x.length; i++) x[i] = (float) r.nextGaussian();
          for (int i = 0; i < y0.length; i++) y0[i] = add ? (float) r.nextGaussian() : 0f;
          Matrix m = matrix(w, out, in);
          float[] all = y0.clone();
          gemm.product(m, x, 0, rows, all, add);
          for (int[] call :
              new int[][] {{0, 1}, {9, 1}, {69, 1}, {0, 3}, {0, 7}, {33, 7}, {63, 7}}) {
            float[] y = y0.clone();
            gemm.product(m, x, call[0], call[1], y, add);
            for (int t = call[0]; t < call[0] + call[1]; t++)
              assertArrayEquals(
                  Arrays.copyOfRange(all, t * out, (t + 1) * out),
                  Arrays.copyOfRange(y, t * out, (t + 1) * out),
                  Arrays.toString(sh) + " add " + add + ": row " + t + " in a call of " + call[1]);
          }
        }
    }
  }

  /**
   * oneDNN's products are the Vector API kernels' bits on the same BF16-rounded activations (so a
   * step's generated rows may take either path, {@code bf16-gemm-decode-rows}), in the order of the
   * instructions oneDNN runs here ({@code vdpbf16ps}, or AMX's {@code tdpbf16ps}: {@link
   * Scalar16#tileOrder}): for reductions of one, three and six chunks (a short last one among
   * them), 1 to 70 rows, weights resident or copied per call, and the runner's start-up check
   * agrees.
   */
  @Test
  void oneDnnAddsAsTheKernelsDo() {
    assertEquals(Bf16Gemm.onAmx(), Scalar16.tileOrder(), Bf16Gemm.implementation());
    assertEquals(null, Bf16Gemm.kernelsMismatch());
    Random r = new Random(29);
    int[][] shapes = {{512, 200}, {1536, 130}, {2816, 64}}; // in, out
    for (long budget : new long[] {0, 1 << 30})
      try (Bf16Gemm gemm = new Bf16Gemm(budget)) {
        for (int[] sh : shapes) {
          int in = sh[0], out = sh[1];
          float[] w = new float[out * in];
          for (int i = 0; i < w.length; i++) w[i] = (float) r.nextGaussian() * 0.05f;
          Matrix m = matrix(w, out, in);
          for (int rows : new int[] {1, 2, 4, 5, 16, 33, 70}) {
            float[] x = new float[rows * in], xp = new float[rows * in];
            for (int i = 0; i < x.length; i++) x[i] = (float) r.nextGaussian();
            float[] y = new float[rows * out], yk = new float[rows * out];
            gemm.product(m, x, rows, y, false);
            Kernels.roundToBf16(x, 0, x.length);
            for (int t = 0; t < rows; t++) Activations.put(x, t * in, in, xp, t * in, m.packed());
            m.product(xp, rows, yk, out, 0, 0, out, false);
            assertArrayEquals(yk, y, Arrays.toString(sh) + ", " + rows + " rows, budget " + budget);
          }
        }
      }
  }

  /**
   * The runner's start-up decision: oneDNN adds as the kernels do (as {@code vdpbf16ps} does with
   * AVX512_BF16; on AMX tiles, Sapphire and Emerald Rapids, as {@code tdpbf16ps} does, whose sums
   * the kernels compute there instead), so generated rows round to BF16 and many of them go to
   * oneDNN. ({@code DNNL_MAX_CPU_ISA=AVX512_CORE_BF16} keeps oneDNN off AMX: the pom runs these
   * tests so too, and the kernels then add in {@code vdpbf16ps}'s order.)
   */
  @Test
  void generatedRowsGoToOneDnnWhereItAddsAsTheKernelsDo() {
    assertNull(Bf16Gemm.kernelsMismatch(), Bf16Gemm.implementation());
    int wanted = Math.min(16, ComputeSettings.jvm().kernelMaxRows() + 1);
    assertEquals(wanted, Bf16Gemm.decodeRows());
  }

  /**
   * The activations' rounding to BF16 ({@link Vec32#toBf16}, and the scalar {@code
   * DType.floatToBf16} where the Vector API is off) gives oneDNN's f32 → bf16 reorder's bits:
   * random bit patterns of every exponent, halfway cases both ways, subnormals, the largest float
   * (rounds to infinity), zeros and infinities; NaN stays NaN. A length with a tail past the last
   * vector.
   */
  @Test
  void activationsRoundAsOneDnnReorderDoes() {
    SplittableRandom r = new SplittableRandom(3);
    int n = 100_003;
    float[] x = new float[n];
    for (int i = 0; i < n; i++) {
      int bits = r.nextInt();
      x[i] =
          Float.intBitsToFloat(
              switch (i % 8) {
                case 0 -> (bits & ~0xffff) | 0x8000; // halfway: to even, up or down
                case 1 -> (bits & ~0x1ffff) | 0x18000; // halfway, odd: up
                case 2 -> bits & 0x807fffff; // subnormal
                default -> bits;
              });
    }
    float[] special = {0f, -0f, Float.MAX_VALUE, -Float.MAX_VALUE, Float.MIN_VALUE};
    System.arraycopy(special, 0, x, n - special.length - 3, special.length);
    x[7] = Float.POSITIVE_INFINITY;
    x[15] = Float.NEGATIVE_INFINITY;
    short[] vector = new short[n];
    Vec32.toBf16(x, 0, vector, 0, n);
    float[] inPlace = x.clone();
    Vec32.roundToBf16(inPlace, 0, n);
    try (engine e = new engine(engine.kind.cpu, 0);
        stream st = new stream(e);
        memory.desc f =
            new memory.desc(new LongPointer(1, n), memory.data_type.f32, memory.format_tag.ab);
        memory.desc b =
            new memory.desc(new LongPointer(1, n), memory.data_type.bf16, memory.format_tag.ab);
        FloatPointer fp = new FloatPointer(x);
        ShortPointer bp = new ShortPointer(n);
        memory fm = new memory(f, e, fp);
        memory bm = new memory(b, e, bp);
        reorder re = new reorder(fm, bm)) {
      re.execute(st, fm, bm);
      st._wait();
      int nans = 0;
      for (int i = 0; i < n; i++) {
        short want = bp.get(i);
        if (Float.isNaN(x[i])) {
          nans++;
          assertTrue(Float.isNaN(DType.BF16.toFloat(vector[i])), "NaN at " + i);
        } else
          assertEquals(
              want,
              vector[i],
              String.format(
                  "%08x: oneDNN %04x, ours %04x", Float.floatToRawIntBits(x[i]), want, vector[i]));
        assertEquals(Scalar16.toBf16(x[i]), vector[i], "scalar and vector at " + i);
        assertEquals(vector[i] << 16, Float.floatToRawIntBits(inPlace[i]), "in place at " + i);
      }
      assertTrue(nans > 0, "random patterns include NaNs");
    }
  }

  @Test
  void notForOtherDtypesOrWidths() {
    for (int in : new int[] {24, 48, 528}) // in not a multiple of 32
    assertEquals(false, Bf16Gemm.handles(matrix(new float[64 * in], 64, in)));
    var f16 = new InMemoryWeights(Map.of("w", tensor(new float[64 * 64], 64, 64)), "test");
    assertEquals(false, Bf16Gemm.handles(Matrix.load(f16, DType.F16, List.of("w"))));
  }

  /**
   * The golden Llama (BF16) prompt in a 70-row step, so every product runs on oneDNN: against the
   * scalar reference with BF16-rounded product inputs (the LM head's too where generated rows share
   * oneDNN's arithmetic, {@code bf16-gemm-decode-rows}) within 1e-4 (the same function, summed in
   * another order: measured 1e-6), against PyTorch's FP32 logits no further than that reference is
   * from them (the activations' BF16 rounding: 1.35e-2 on these logits), and the same bits next to
   * another companion sequence.
   */
  @Test
  void goldenPromptOnTheBf16Path() throws Exception {
    Path dir = Path.of(Bf16GemmTest.class.getResource("/golden/llama").toURI());
    JsonNode g = GoldenPrompt.read(dir);
    int[] tokens = GoldenPrompt.tokens(g);
    float[][] ref, rounded, a, b;
    boolean headRounded; // generated rows on oneDNN's arithmetic: every row's LM head input in BF16
    try (ModelRunner m = ModelRunners.open(dir, "auto", 32, 8)) {
      assertEquals(DType.BF16, ((CpuModelRunner) m).dtype());
      headRounded = ((CpuModelRunner) m).generatedRowsOnOneDnnFrom() > 0;
      a = GoldenPrompt.withCompanion(m, tokens, 30, 3);
      b = GoldenPrompt.withCompanion(m, tokens, 50, 17);
    }
    try (WeightSource w = SafetensorsWeights.open(dir)) {
      ref = new ScalarReferenceModel(ModelConfigs.read(dir), w).logits(tokens);
      rounded =
          new ScalarReferenceModel(ModelConfigs.read(dir), w, true, headRounded).logits(tokens);
    }
    double toRounded = 0, toTorch = 0;
    for (int t = 0; t < tokens.length; t++) {
      JsonNode row = g.get("logits").get(t);
      for (int i = 0; i < row.size(); i++) {
        toRounded = Math.max(toRounded, Math.abs(a[t][i] - rounded[t][i]));
        toTorch = Math.max(toTorch, Math.abs(a[t][i] - row.get(i).asDouble()));
      }
      assertArrayEquals(a[t], b[t], "position " + t + " with another companion");
    }
    double refToTorch = 0, fp32RefToTorch = 0;
    for (int t = 0; t < tokens.length; t++) {
      JsonNode row = g.get("logits").get(t);
      for (int i = 0; i < row.size(); i++) {
        refToTorch = Math.max(refToTorch, Math.abs(rounded[t][i] - row.get(i).asDouble()));
        fp32RefToTorch = Math.max(fp32RefToTorch, Math.abs(ref[t][i] - row.get(i).asDouble()));
      }
    }
    assertTrue(fp32RefToTorch <= 1e-4, "the FP32 reference is PyTorch's: " + fp32RefToTorch);
    System.out.printf(
        "oneDNN BF16 path: max |Δ| to the BF16-input reference %.2e, to PyTorch %.2e "
            + "(the BF16-input reference's own distance to PyTorch %.2e)%n",
        toRounded, toTorch, refToTorch);
    assertTrue(toRounded <= 1e-4, "to the BF16-input reference: " + toRounded);
    assertTrue(toTorch <= refToTorch + 1e-4, "to PyTorch: " + toTorch + " vs " + refToTorch);
  }

  private static Matrix matrix(float[] w, int out, int in) {
    var src = new InMemoryWeights(Map.of("w", tensor(w, out, in)), "test");
    return Matrix.load(src, DType.BF16, List.of("w"));
  }

  private static InMemoryWeights.Tensor tensor(float[] w, int out, int in) {
    return new InMemoryWeights.Tensor(w, new long[] {out, in});
  }

  private static float bf16(float v) {
    return DType.bf16ToFloat(DType.floatToBf16(v));
  }
}
