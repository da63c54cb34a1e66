package dev.troupe.engine.cpu;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * Products {@code y = x · Wᵀ} with F16 (IEEE half) weights and FP32 accumulation, for 1–64
 * activation rows (Java Vector API). Weights are packed and tiled as for {@link Bf16Kernel} (two
 * halves per little-endian int, {@code half = ⌈in/2⌉} ints per row, {@link Matrix#tiled}) and
 * activations packed to match.
 *
 * <p>F16 widening takes more steps than BF16's, and with them inlined eight times into a 4×4 block
 * C2 gives up inlining the loads (measured: "callee is too large", every vector boxed, ~10×
 * slower). So each group of 4 weight rows is widened once into a per-thread FP32 tile in the packed
 * order (the low halves, then the high ones), and {@link Vec32}'s blocks run on the tile for all
 * activation rows: the widening is paid once per weight, whatever the batch.
 */
final class F16Kernel {
  private static final VectorSpecies<Integer> I = IntVector.SPECIES_PREFERRED;
  private static final int L = I.length();
  private static final ThreadLocal<float[]> TILE = ThreadLocal.withInitial(() -> new float[0]);

  private F16Kernel() {}

  /** As {@link Bf16Kernel#range}. */
  static void range(
      float[] x,
      int rows,
      int half,
      int[] w,
      int wRow0,
      float[] y,
      int yStride,
      int yOff,
      int o0,
      int o1,
      boolean add) {
    int in2 = 2 * half;
    float[] tile = TILE.get();
    if (tile.length < 4 * in2) TILE.set(tile = new float[4 * in2]);
    for (int o = o0; o < o1; o += 4) {
      int n = Math.min(4, o1 - o);
      for (int r = 0; r < n; r++) widen(w, o + r - wRow0, half, tile, r * in2);
      Vec32.range(x, rows, in2, tile, o, y, yStride, yOff, o, o + n, add);
    }
  }

  /**
   * Row {@code r} of the part ({@link Matrix#tiled} layout) as FP32 into {@code dst[d0 ..]}: low
   * halves, then high ones.
   */
  private static void widen(int[] w, int r, int half, float[] dst, int d0) {
    int g = (r & ~3) * half, j = r & 3, bound = I.loopBound(half), k = 0;
    for (; k < bound; k += L) {
      IntVector v = IntVector.fromArray(I, w, g + 4 * k + j * L);
      lo(v).intoArray(dst, d0 + k);
      hi(v).intoArray(dst, d0 + half + k);
    }
    for (int t = g + 4 * bound + j * (half - bound) - k; k < half; k++) {
      dst[d0 + k] = Scalar16.lo(true, w[t + k]);
      dst[d0 + half + k] = Scalar16.hi(true, w[t + k]);
    }
  }

  /** IEEE half bit patterns, zero-extended in each int lane, as floats (tests): {@link #lo}. */
  static FloatVector f16(IntVector h) {
    return lo(h);
  }

  /**
   * Element {@code 2k} of each lane's pair: exponent and mantissa moved to FP32 position and scaled
   * by 2¹¹², exact for every finite half, subnormals included (a denormal float times 2¹¹²); then
   * the sign. Infinities and NaN would come out finite: {@link Matrix} refuses F16 weights holding
   * them at load.
   */
  static FloatVector lo(IntVector v) {
    return v.lanewise(VectorOperators.LSHL, 13)
        .and(0x0fffe000)
        .reinterpretAsFloats()
        .mul(0x1p112f)
        .reinterpretAsInts()
        .or(v.lanewise(VectorOperators.LSHL, 16).and(0x80000000))
        .reinterpretAsFloats();
  }

  /** Element {@code 2k + 1} of each lane's pair, as {@link #lo}. */
  static FloatVector hi(IntVector v) {
    return v.lanewise(VectorOperators.LSHR, 3)
        .and(0x0fffe000)
        .reinterpretAsFloats()
        .mul(0x1p112f)
        .reinterpretAsInts()
        .or(v.and(0x80000000))
        .reinterpretAsFloats();
  }
}
