package dev.troupe.engine.cpu;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * Products {@code y = x · Wᵀ} with 16-bit weights (BF16 or F16) widened to FP32 in registers and
 * FP32 accumulation, for 1–64 activation rows (Java Vector API).
 *
 * <p>Weights are the checkpoint's bytes read as little-endian {@code int}s: each int packs the
 * elements {@code 2k} (low half) and {@code 2k + 1} (high half) of a row, {@code half = ⌈in/2⌉}
 * ints per row. Widening needs no lane shuffles: BF16 {@code lo = v << 16}, {@code hi = v &
 * 0xffff0000} are already FP32 bit patterns; F16 takes a few integer steps ({@link #f16}). The
 * activations come {@link Activations#pack packed} to match: per row the even elements, then the
 * odd ones, so lane k of {@code lo} meets x[2k] and of {@code hi} meets x[2k + 1].
 *
 * <p>Blocking as in the FP32 kernel: 4 weight rows × 4 activation rows (16 accumulators, 8 widened
 * weight vectors, AVX-512's 32 registers), so each weight row is read from memory once for all
 * activation rows.
 */
final class Vec16 {
  private static final VectorSpecies<Integer> I = IntVector.SPECIES_PREFERRED;
  private static final VectorSpecies<Float> F = FloatVector.SPECIES_PREFERRED;
  private static final int L = I.length();

  private Vec16() {}

  /**
   * {@code y[b·yStride + yOff + o] (+)= Σ_i x[b, i] · W[o, i]} for {@code o ∈ [o0, o1)} and all
   * {@code rows} rows; {@code w} holds rows {@code [wRow0, …)} of W ({@code half} ints each), x
   * rows are packed, {@code 2·half} floats apart.
   */
  static void range(
      boolean f16,
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
    int o = o0;
    for (; o + 3 < o1; o += 4) {
      int wo = (o - wRow0) * half;
      int b = 0;
      for (; b + 3 < rows; b += 4) block4x4(f16, x, b, half, w, wo, y, yStride, yOff + o, add);
      for (; b < rows; b++) block4x1(f16, x, b, half, w, wo, y, yStride, yOff + o, add);
    }
    for (; o < o1; o++)
      for (int b = 0; b < rows; b++) {
        float s = dot(f16, x, b * 2 * half, half, w, (o - wRow0) * half);
        int yi = b * yStride + yOff + o;
        y[yi] = add ? y[yi] + s : s;
      }
  }

  static FloatVector lo(boolean f16, IntVector v) {
    return f16 ? f16(v.and(0xffff)) : v.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
  }

  static FloatVector hi(boolean f16, IntVector v) {
    return f16
        ? f16(v.lanewise(VectorOperators.LSHR, 16))
        : v.and(0xffff0000).reinterpretAsFloats();
  }

  /**
   * IEEE half bit patterns (zero-extended in each int lane) to floats, exactly: normals by moving
   * the exponent, subnormals as {@code mantissa · 2⁻²⁴} (an int-to-float conversion, so no FP32
   * denormal ever appears), infinities and NaN with an all-ones exponent.
   */
  static FloatVector f16(IntVector h) {
    IntVector mag = h.and(0x7fff);
    IntVector bits = mag.lanewise(VectorOperators.LSHL, 13);
    FloatVector v = bits.add(0x38000000).reinterpretAsFloats(); // exponent + (127 − 15)
    VectorMask<Integer> sub = mag.compare(VectorOperators.LT, 0x400);
    if (sub.anyTrue()) {
      FloatVector s = ((FloatVector) mag.convert(VectorOperators.I2F, 0)).mul(0x1p-24f);
      v = v.blend(s, sub.cast(F));
    }
    VectorMask<Integer> special = mag.compare(VectorOperators.GE, 0x7c00);
    if (special.anyTrue()) v = v.blend(bits.or(0x7f800000).reinterpretAsFloats(), special.cast(F));
    IntVector sign = h.and(0x8000).lanewise(VectorOperators.LSHL, 16);
    return v.reinterpretAsInts().or(sign).reinterpretAsFloats();
  }

  private static void block4x4(
      boolean f16,
      float[] x,
      int b,
      int half,
      int[] w,
      int wo,
      float[] y,
      int yStride,
      int yo,
      boolean add) {
    int w0 = wo, w1 = w0 + half, w2 = w1 + half, w3 = w2 + half;
    int xs = 2 * half, x0 = b * xs, x1 = x0 + xs, x2 = x1 + xs, x3 = x2 + xs;
    FloatVector a00 = FloatVector.zero(F), a01 = a00, a02 = a00, a03 = a00;
    FloatVector a10 = a00, a11 = a00, a12 = a00, a13 = a00;
    FloatVector a20 = a00, a21 = a00, a22 = a00, a23 = a00;
    FloatVector a30 = a00, a31 = a00, a32 = a00, a33 = a00;
    int bound = I.loopBound(half), k = 0;
    for (; k < bound; k += L) {
      IntVector v0 = IntVector.fromArray(I, w, w0 + k), v1 = IntVector.fromArray(I, w, w1 + k);
      IntVector v2 = IntVector.fromArray(I, w, w2 + k), v3 = IntVector.fromArray(I, w, w3 + k);
      FloatVector l0 = lo(f16, v0), l1 = lo(f16, v1), l2 = lo(f16, v2), l3 = lo(f16, v3);
      FloatVector h0 = hi(f16, v0), h1 = hi(f16, v1), h2 = hi(f16, v2), h3 = hi(f16, v3);
      FloatVector e = FloatVector.fromArray(F, x, x0 + k);
      FloatVector d = FloatVector.fromArray(F, x, x0 + half + k);
      a00 = h0.fma(d, l0.fma(e, a00));
      a01 = h1.fma(d, l1.fma(e, a01));
      a02 = h2.fma(d, l2.fma(e, a02));
      a03 = h3.fma(d, l3.fma(e, a03));
      e = FloatVector.fromArray(F, x, x1 + k);
      d = FloatVector.fromArray(F, x, x1 + half + k);
      a10 = h0.fma(d, l0.fma(e, a10));
      a11 = h1.fma(d, l1.fma(e, a11));
      a12 = h2.fma(d, l2.fma(e, a12));
      a13 = h3.fma(d, l3.fma(e, a13));
      e = FloatVector.fromArray(F, x, x2 + k);
      d = FloatVector.fromArray(F, x, x2 + half + k);
      a20 = h0.fma(d, l0.fma(e, a20));
      a21 = h1.fma(d, l1.fma(e, a21));
      a22 = h2.fma(d, l2.fma(e, a22));
      a23 = h3.fma(d, l3.fma(e, a23));
      e = FloatVector.fromArray(F, x, x3 + k);
      d = FloatVector.fromArray(F, x, x3 + half + k);
      a30 = h0.fma(d, l0.fma(e, a30));
      a31 = h1.fma(d, l1.fma(e, a31));
      a32 = h2.fma(d, l2.fma(e, a32));
      a33 = h3.fma(d, l3.fma(e, a33));
    }
    int y0 = b * yStride + yo, y1 = y0 + yStride, y2 = y1 + yStride, y3 = y2 + yStride;
    put(y, y0, add, a00, f16, x, x0, half, w, w0, k);
    put(y, y0 + 1, add, a01, f16, x, x0, half, w, w1, k);
    put(y, y0 + 2, add, a02, f16, x, x0, half, w, w2, k);
    put(y, y0 + 3, add, a03, f16, x, x0, half, w, w3, k);
    put(y, y1, add, a10, f16, x, x1, half, w, w0, k);
    put(y, y1 + 1, add, a11, f16, x, x1, half, w, w1, k);
    put(y, y1 + 2, add, a12, f16, x, x1, half, w, w2, k);
    put(y, y1 + 3, add, a13, f16, x, x1, half, w, w3, k);
    put(y, y2, add, a20, f16, x, x2, half, w, w0, k);
    put(y, y2 + 1, add, a21, f16, x, x2, half, w, w1, k);
    put(y, y2 + 2, add, a22, f16, x, x2, half, w, w2, k);
    put(y, y2 + 3, add, a23, f16, x, x2, half, w, w3, k);
    put(y, y3, add, a30, f16, x, x3, half, w, w0, k);
    put(y, y3 + 1, add, a31, f16, x, x3, half, w, w1, k);
    put(y, y3 + 2, add, a32, f16, x, x3, half, w, w2, k);
    put(y, y3 + 3, add, a33, f16, x, x3, half, w, w3, k);
  }

  private static void block4x1(
      boolean f16,
      float[] x,
      int b,
      int half,
      int[] w,
      int wo,
      float[] y,
      int yStride,
      int yo,
      boolean add) {
    int w0 = wo, w1 = w0 + half, w2 = w1 + half, w3 = w2 + half, x0 = b * 2 * half;
    // the same accumulation order as block4x4, so a row gets the same bits alone or in a batch
    // (one activation row is memory-bound: the FMA chains' latency does not show)
    FloatVector a0 = FloatVector.zero(F), a1 = a0, a2 = a0, a3 = a0;
    int bound = I.loopBound(half), k = 0;
    for (; k < bound; k += L) {
      FloatVector e = FloatVector.fromArray(F, x, x0 + k);
      FloatVector d = FloatVector.fromArray(F, x, x0 + half + k);
      IntVector v0 = IntVector.fromArray(I, w, w0 + k), v1 = IntVector.fromArray(I, w, w1 + k);
      IntVector v2 = IntVector.fromArray(I, w, w2 + k), v3 = IntVector.fromArray(I, w, w3 + k);
      a0 = hi(f16, v0).fma(d, lo(f16, v0).fma(e, a0));
      a1 = hi(f16, v1).fma(d, lo(f16, v1).fma(e, a1));
      a2 = hi(f16, v2).fma(d, lo(f16, v2).fma(e, a2));
      a3 = hi(f16, v3).fma(d, lo(f16, v3).fma(e, a3));
    }
    int y0 = b * yStride + yo;
    put(y, y0, add, a0, f16, x, x0, half, w, w0, k);
    put(y, y0 + 1, add, a1, f16, x, x0, half, w, w1, k);
    put(y, y0 + 2, add, a2, f16, x, x0, half, w, w2, k);
    put(y, y0 + 3, add, a3, f16, x, x0, half, w, w3, k);
  }

  /** Lanes of {@code acc} plus the scalar tail {@code [from, half)}, stored or added. */
  private static void put(
      float[] y,
      int yi,
      boolean add,
      FloatVector acc,
      boolean f16,
      float[] x,
      int xo,
      int half,
      int[] w,
      int wo,
      int from) {
    float s = acc.reduceLanes(VectorOperators.ADD) + tail(f16, x, xo, half, w, wo, from);
    y[yi] = add ? y[yi] + s : s;
  }

  private static float tail(boolean f16, float[] x, int xo, int half, int[] w, int wo, int from) {
    float s = 0;
    for (int k = from; k < half; k++) {
      int v = w[wo + k];
      s += Scalar16.lo(f16, v) * x[xo + k] + Scalar16.hi(f16, v) * x[xo + half + k];
    }
    return s;
  }

  private static float dot(boolean f16, float[] x, int xo, int half, int[] w, int wo) {
    FloatVector a = FloatVector.zero(F);
    int bound = I.loopBound(half), k = 0;
    for (; k < bound; k += L) {
      IntVector v = IntVector.fromArray(I, w, wo + k);
      a =
          hi(f16, v)
              .fma(
                  FloatVector.fromArray(F, x, xo + half + k),
                  lo(f16, v).fma(FloatVector.fromArray(F, x, xo + k), a));
    }
    return a.reduceLanes(VectorOperators.ADD) + tail(f16, x, xo, half, w, wo, k);
  }

  static int lanes() {
    return F.length();
  }
}
