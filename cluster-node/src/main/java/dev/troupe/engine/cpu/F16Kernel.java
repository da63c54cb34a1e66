package dev.troupe.engine.cpu;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * Products {@code y = x · Wᵀ} with F16 (IEEE half) weights and FP32 accumulation, for 1–64
 * activation rows (Java Vector API). Weights are packed and laid out as for {@link Bf16Kernel} (two
 * halves per little-endian int, {@code half = ⌈in/2⌉} ints per row, {@link Matrix#tiled}'s k-major
 * groups) and activations packed to match.
 *
 * <p>F16 widening takes more steps than BF16's, and with them inlined eight times into a 4-row
 * block C2 gave up inlining the loads (measured on the earlier layout: "callee is too large", every
 * vector boxed, ~10× slower). So each group is widened once into a per-thread FP32 tile in the same
 * k-major order (per pair, the low halves of the group's rows, then the high ones), and the blocks
 * run on the tile for all activation rows: the widening is paid once per weight, whatever the
 * batch. Each lane adds the pairs in {@link Bf16Kernel}'s order, so results match {@link Scalar16}
 * bit for bit.
 */
final class F16Kernel {
  private static final VectorSpecies<Integer> I = IntVector.SPECIES_PREFERRED;
  private static final VectorSpecies<Float> F = FloatVector.SPECIES_PREFERRED;
  private static final int L = I.length();
  private static final int G = 4 * L; // Matrix.GROUP

  /** Pairs widened at a time: 32 × 2 × 64 floats = 16 KB, in L1 with the activations. */
  private static final int PAIRS = 32;

  private static final ThreadLocal<float[]> TILE =
      ThreadLocal.withInitial(() -> new float[2 * G * PAIRS]);
  private static final ThreadLocal<float[]> ACC = ThreadLocal.withInitial(() -> new float[0]);

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
    float[] tile = TILE.get(), acc = ACC.get();
    if (acc.length < rows * G) ACC.set(acc = new float[rows * G]);
    int xs = 2 * half;
    for (int o = o0; o < o1; ) {
      int start = o - (o - wRow0) % G, end = Math.min(o1, start + G), g = (start - wRow0) * half;
      // the group's sums for every row into acc, PAIRS pairs at a time
      for (int k0 = 0; k0 < half; k0 += PAIRS) {
        int k1 = Math.min(half, k0 + PAIRS);
        widen(w, g, k0, k1, tile);
        int b = 0;
        for (; b + 3 < rows; b += 4) block4(x, b * xs, xs, half, k0, k1, tile, acc, b * G);
        for (; b < rows; b++) block1(x, b * xs, half, k0, k1, tile, acc, b * G);
      }
      Bf16Kernel.copyPart(acc, rows, start, o, end, y, yStride, yOff, add);
      o = end;
    }
  }

  /**
   * Pairs {@code [k0, k1)} of the group at int {@code g} as FP32: per pair, the group's {@code G}
   * low halves, then its {@code G} high ones.
   */
  private static void widen(int[] w, int g, int k0, int k1, float[] tile) {
    for (int k = k0; k < k1; k++)
      for (int j = 0; j < G; j += L) {
        IntVector v = IntVector.fromArray(I, w, g + k * G + j);
        lo(v).intoArray(tile, 2 * G * (k - k0) + j);
        hi(v).intoArray(tile, 2 * G * (k - k0) + G + j);
      }
  }

  /**
   * Pairs {@code [k0, k1)} (widened in {@code t}) for 4 activation rows, continuing the sums in
   * {@code acc} rows {@code G} apart from {@code a0} (zero at {@code k0 = 0}): the float
   * accumulator goes through memory unchanged, so the chain is the same as in one pass.
   */
  private static void block4(
      float[] x, int x0, int xs, int half, int k0, int k1, float[] t, float[] acc, int a0) {
    int x1 = x0 + xs, x2 = x1 + xs, x3 = x2 + xs, r1 = a0 + G, r2 = r1 + G, r3 = r2 + G;
    FloatVector a00, a01, a02, a03, a10, a11, a12, a13, a20, a21, a22, a23, a30, a31, a32, a33;
    if (k0 == 0) {
      a00 = a01 = a02 = a03 = a10 = a11 = a12 = a13 = FloatVector.zero(F);
      a20 = a21 = a22 = a23 = a30 = a31 = a32 = a33 = a00;
    } else {
      a00 = FloatVector.fromArray(F, acc, a0);
      a01 = FloatVector.fromArray(F, acc, a0 + L);
      a02 = FloatVector.fromArray(F, acc, a0 + 2 * L);
      a03 = FloatVector.fromArray(F, acc, a0 + 3 * L);
      a10 = FloatVector.fromArray(F, acc, r1);
      a11 = FloatVector.fromArray(F, acc, r1 + L);
      a12 = FloatVector.fromArray(F, acc, r1 + 2 * L);
      a13 = FloatVector.fromArray(F, acc, r1 + 3 * L);
      a20 = FloatVector.fromArray(F, acc, r2);
      a21 = FloatVector.fromArray(F, acc, r2 + L);
      a22 = FloatVector.fromArray(F, acc, r2 + 2 * L);
      a23 = FloatVector.fromArray(F, acc, r2 + 3 * L);
      a30 = FloatVector.fromArray(F, acc, r3);
      a31 = FloatVector.fromArray(F, acc, r3 + L);
      a32 = FloatVector.fromArray(F, acc, r3 + 2 * L);
      a33 = FloatVector.fromArray(F, acc, r3 + 3 * L);
    }
    for (int k = k0, at = 0; k < k1; k++, at += 2 * G) {
      FloatVector l0 = FloatVector.fromArray(F, t, at), l1 = FloatVector.fromArray(F, t, at + L);
      FloatVector l2 = FloatVector.fromArray(F, t, at + 2 * L);
      FloatVector l3 = FloatVector.fromArray(F, t, at + 3 * L);
      FloatVector h0 = FloatVector.fromArray(F, t, at + G);
      FloatVector h1 = FloatVector.fromArray(F, t, at + G + L);
      FloatVector h2 = FloatVector.fromArray(F, t, at + G + 2 * L);
      FloatVector h3 = FloatVector.fromArray(F, t, at + G + 3 * L);
      FloatVector e = FloatVector.broadcast(F, x[x0 + k]);
      FloatVector d = FloatVector.broadcast(F, x[x0 + half + k]);
      a00 = h0.fma(d, l0.fma(e, a00));
      a01 = h1.fma(d, l1.fma(e, a01));
      a02 = h2.fma(d, l2.fma(e, a02));
      a03 = h3.fma(d, l3.fma(e, a03));
      e = FloatVector.broadcast(F, x[x1 + k]);
      d = FloatVector.broadcast(F, x[x1 + half + k]);
      a10 = h0.fma(d, l0.fma(e, a10));
      a11 = h1.fma(d, l1.fma(e, a11));
      a12 = h2.fma(d, l2.fma(e, a12));
      a13 = h3.fma(d, l3.fma(e, a13));
      e = FloatVector.broadcast(F, x[x2 + k]);
      d = FloatVector.broadcast(F, x[x2 + half + k]);
      a20 = h0.fma(d, l0.fma(e, a20));
      a21 = h1.fma(d, l1.fma(e, a21));
      a22 = h2.fma(d, l2.fma(e, a22));
      a23 = h3.fma(d, l3.fma(e, a23));
      e = FloatVector.broadcast(F, x[x3 + k]);
      d = FloatVector.broadcast(F, x[x3 + half + k]);
      a30 = h0.fma(d, l0.fma(e, a30));
      a31 = h1.fma(d, l1.fma(e, a31));
      a32 = h2.fma(d, l2.fma(e, a32));
      a33 = h3.fma(d, l3.fma(e, a33));
    }
    a00.intoArray(acc, a0);
    a01.intoArray(acc, a0 + L);
    a02.intoArray(acc, a0 + 2 * L);
    a03.intoArray(acc, a0 + 3 * L);
    a10.intoArray(acc, r1);
    a11.intoArray(acc, r1 + L);
    a12.intoArray(acc, r1 + 2 * L);
    a13.intoArray(acc, r1 + 3 * L);
    a20.intoArray(acc, r2);
    a21.intoArray(acc, r2 + L);
    a22.intoArray(acc, r2 + 2 * L);
    a23.intoArray(acc, r2 + 3 * L);
    a30.intoArray(acc, r3);
    a31.intoArray(acc, r3 + L);
    a32.intoArray(acc, r3 + 2 * L);
    a33.intoArray(acc, r3 + 3 * L);
  }

  /** As {@link #block4} for one activation row. */
  private static void block1(
      float[] x, int x0, int half, int k0, int k1, float[] t, float[] acc, int a0) {
    FloatVector z = FloatVector.zero(F);
    FloatVector s0 = k0 == 0 ? z : FloatVector.fromArray(F, acc, a0);
    FloatVector s1 = k0 == 0 ? z : FloatVector.fromArray(F, acc, a0 + L);
    FloatVector s2 = k0 == 0 ? z : FloatVector.fromArray(F, acc, a0 + 2 * L);
    FloatVector s3 = k0 == 0 ? z : FloatVector.fromArray(F, acc, a0 + 3 * L);
    for (int k = k0, at = 0; k < k1; k++, at += 2 * G) {
      FloatVector e = FloatVector.broadcast(F, x[x0 + k]);
      FloatVector d = FloatVector.broadcast(F, x[x0 + half + k]);
      s0 = FloatVector.fromArray(F, t, at + G).fma(d, FloatVector.fromArray(F, t, at).fma(e, s0));
      s1 =
          FloatVector.fromArray(F, t, at + G + L)
              .fma(d, FloatVector.fromArray(F, t, at + L).fma(e, s1));
      s2 =
          FloatVector.fromArray(F, t, at + G + 2 * L)
              .fma(d, FloatVector.fromArray(F, t, at + 2 * L).fma(e, s2));
      s3 =
          FloatVector.fromArray(F, t, at + G + 3 * L)
              .fma(d, FloatVector.fromArray(F, t, at + 3 * L).fma(e, s3));
    }
    s0.intoArray(acc, a0);
    s1.intoArray(acc, a0 + L);
    s2.intoArray(acc, a0 + 2 * L);
    s3.intoArray(acc, a0 + 3 * L);
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
