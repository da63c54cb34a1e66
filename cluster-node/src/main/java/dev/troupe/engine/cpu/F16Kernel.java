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
  private static final ThreadLocal<float[]> TILE = ThreadLocal.withInitial(() -> new float[0]);
  private static final ThreadLocal<float[]> PARTIAL = ThreadLocal.withInitial(() -> new float[0]);

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
    float[] tile = TILE.get();
    if (tile.length < 2 * G * half) TILE.set(tile = new float[2 * G * half]);
    int xs = 2 * half;
    for (int o = o0; o < o1; ) {
      int start = o - (o - wRow0) % G, end = Math.min(o1, start + G);
      widen(w, (start - wRow0) * half, half, tile);
      if (o == start && end == start + G) {
        int b = 0;
        for (; b + 3 < rows; b += 4)
          block4(x, b * xs, xs, half, tile, y, b * yStride + yOff + o, yStride, add);
        for (; b < rows; b++) block1(x, b * xs, half, tile, y, b * yStride + yOff + o, add);
      } else {
        float[] s = PARTIAL.get();
        if (s.length < rows * G) PARTIAL.set(s = new float[rows * G]);
        int b = 0;
        for (; b + 3 < rows; b += 4) block4(x, b * xs, xs, half, tile, s, b * G, G, false);
        for (; b < rows; b++) block1(x, b * xs, half, tile, s, b * G, false);
        Bf16Kernel.copyPart(s, rows, start, o, end, y, yStride, yOff, add);
      }
      o = end;
    }
  }

  /** The group at int {@code g} as FP32: per pair k, {@code G} low halves then {@code G} high. */
  private static void widen(int[] w, int g, int half, float[] tile) {
    for (int k = 0; k < half; k++)
      for (int j = 0; j < G; j += L) {
        IntVector v = IntVector.fromArray(I, w, g + k * G + j);
        lo(v).intoArray(tile, 2 * G * k + j);
        hi(v).intoArray(tile, 2 * G * k + G + j);
      }
  }

  private static void block4(
      float[] x, int x0, int xs, int half, float[] t, float[] y, int y0, int ys, boolean add) {
    int x1 = x0 + xs, x2 = x1 + xs, x3 = x2 + xs;
    FloatVector a00 = FloatVector.zero(F), a01 = a00, a02 = a00, a03 = a00;
    FloatVector a10 = a00, a11 = a00, a12 = a00, a13 = a00;
    FloatVector a20 = a00, a21 = a00, a22 = a00, a23 = a00;
    FloatVector a30 = a00, a31 = a00, a32 = a00, a33 = a00;
    for (int k = 0, at = 0; k < half; k++, at += 2 * G) {
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
    int y1 = y0 + ys, y2 = y1 + ys, y3 = y2 + ys;
    if (add) {
      a00 = a00.add(FloatVector.fromArray(F, y, y0));
      a01 = a01.add(FloatVector.fromArray(F, y, y0 + L));
      a02 = a02.add(FloatVector.fromArray(F, y, y0 + 2 * L));
      a03 = a03.add(FloatVector.fromArray(F, y, y0 + 3 * L));
    }
    a00.intoArray(y, y0);
    a01.intoArray(y, y0 + L);
    a02.intoArray(y, y0 + 2 * L);
    a03.intoArray(y, y0 + 3 * L);
    if (add) {
      a10 = a10.add(FloatVector.fromArray(F, y, y1));
      a11 = a11.add(FloatVector.fromArray(F, y, y1 + L));
      a12 = a12.add(FloatVector.fromArray(F, y, y1 + 2 * L));
      a13 = a13.add(FloatVector.fromArray(F, y, y1 + 3 * L));
    }
    a10.intoArray(y, y1);
    a11.intoArray(y, y1 + L);
    a12.intoArray(y, y1 + 2 * L);
    a13.intoArray(y, y1 + 3 * L);
    if (add) {
      a20 = a20.add(FloatVector.fromArray(F, y, y2));
      a21 = a21.add(FloatVector.fromArray(F, y, y2 + L));
      a22 = a22.add(FloatVector.fromArray(F, y, y2 + 2 * L));
      a23 = a23.add(FloatVector.fromArray(F, y, y2 + 3 * L));
    }
    a20.intoArray(y, y2);
    a21.intoArray(y, y2 + L);
    a22.intoArray(y, y2 + 2 * L);
    a23.intoArray(y, y2 + 3 * L);
    if (add) {
      a30 = a30.add(FloatVector.fromArray(F, y, y3));
      a31 = a31.add(FloatVector.fromArray(F, y, y3 + L));
      a32 = a32.add(FloatVector.fromArray(F, y, y3 + 2 * L));
      a33 = a33.add(FloatVector.fromArray(F, y, y3 + 3 * L));
    }
    a30.intoArray(y, y3);
    a31.intoArray(y, y3 + L);
    a32.intoArray(y, y3 + 2 * L);
    a33.intoArray(y, y3 + 3 * L);
  }

  private static void block1(
      float[] x, int x0, int half, float[] t, float[] y, int y0, boolean add) {
    FloatVector a0 = FloatVector.zero(F), a1 = a0, a2 = a0, a3 = a0;
    for (int k = 0, at = 0; k < half; k++, at += 2 * G) {
      FloatVector e = FloatVector.broadcast(F, x[x0 + k]);
      FloatVector d = FloatVector.broadcast(F, x[x0 + half + k]);
      a0 = FloatVector.fromArray(F, t, at + G).fma(d, FloatVector.fromArray(F, t, at).fma(e, a0));
      a1 =
          FloatVector.fromArray(F, t, at + G + L)
              .fma(d, FloatVector.fromArray(F, t, at + L).fma(e, a1));
      a2 =
          FloatVector.fromArray(F, t, at + G + 2 * L)
              .fma(d, FloatVector.fromArray(F, t, at + 2 * L).fma(e, a2));
      a3 =
          FloatVector.fromArray(F, t, at + G + 3 * L)
              .fma(d, FloatVector.fromArray(F, t, at + 3 * L).fma(e, a3));
    }
    if (add) {
      a0 = a0.add(FloatVector.fromArray(F, y, y0));
      a1 = a1.add(FloatVector.fromArray(F, y, y0 + L));
      a2 = a2.add(FloatVector.fromArray(F, y, y0 + 2 * L));
      a3 = a3.add(FloatVector.fromArray(F, y, y0 + 3 * L));
    }
    a0.intoArray(y, y0);
    a1.intoArray(y, y0 + L);
    a2.intoArray(y, y0 + 2 * L);
    a3.intoArray(y, y0 + 3 * L);
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
