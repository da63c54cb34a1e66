package dev.troupe.engine.cpu;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorSpecies;

/**
 * Products {@code y = x · Wᵀ} with FP32 weights ({@code --dtype float32}) for 1–64 activation rows,
 * Java Vector API: blocks of 4 weight rows × 4 activation rows (16 FMA accumulators, 8 loaded
 * vectors fit AVX-512's 32 registers). The four weight rows stay in L1 while every activation row
 * passes over them, so each weight row is read from memory once per product whatever the batch.
 */
final class Vec32 {
  private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;

  /** Shorts as many as {@link #S}'s lanes: half its width. */
  private static final VectorSpecies<Short> HALF =
      VectorSpecies.of(short.class, VectorShape.forBitSize(S.vectorBitSize() / 2));

  private Vec32() {}

  /**
   * {@code b[bo + i] = bf16(x[xo + i])} for {@code i < n}, each as {@link Scalar16#toBf16} rounds
   * it (oneDNN's f32 → bf16 reorder's bits).
   */
  static void toBf16(float[] x, int xo, short[] b, int bo, int n) {
    int i = 0;
    for (int up = S.loopBound(n); i < up; i += S.length()) {
      IntVector r = bf16Bits(FloatVector.fromArray(S, x, xo + i));
      ((ShortVector) r.convertShape(VectorOperators.I2S, HALF, 0)).intoArray(b, bo + i);
    }
    for (; i < n; i++) b[bo + i] = Scalar16.toBf16(x[xo + i]);
  }

  /**
   * Each lane's BF16 bits (in the low 16 bits of the int): round to nearest even, NaN kept quiet,
   * subnormals to signed zero.
   */
  private static IntVector bf16Bits(FloatVector v) {
    IntVector u = v.reinterpretAsInts();
    IntVector high = u.lanewise(VectorOperators.LSHR, 16);
    VectorMask<Integer> nan = u.and(0x7fffffff).compare(VectorOperators.GT, 0x7f800000);
    VectorMask<Integer> tiny = u.and(0x7f800000).compare(VectorOperators.EQ, 0);
    IntVector r = u.add(high.and(1)).add(0x7fff).lanewise(VectorOperators.LSHR, 16);
    return r.blend(high.or(0x40), nan).blend(high.and(0x8000), tiny);
  }

  /**
   * {@code a[off + i]} rounded to BF16 in place, as {@link #toBf16} rounds it, for {@code i < n}.
   */
  static void roundToBf16(float[] a, int off, int n) {
    int i = 0;
    for (int up = S.loopBound(n); i < up; i += S.length())
      bf16Bits(FloatVector.fromArray(S, a, off + i))
          .lanewise(VectorOperators.LSHL, 16)
          .reinterpretAsFloats()
          .intoArray(a, off + i);
    for (; i < n; i++) a[off + i] = Scalar16.roundToBf16(a[off + i]);
  }

  /**
   * {@code y[b·yStride + yOff + o] (+)= Σ_i x[b·in + i] · W[o, i]} for {@code o ∈ [o0, o1)}; {@code
   * w} holds rows {@code [wRow0, …)} of W.
   */
  static void range(
      float[] x,
      int rows,
      int in,
      float[] w,
      int wRow0,
      float[] y,
      int yStride,
      int yOff,
      int o0,
      int o1,
      boolean add) {
    int o = o0;
    for (; o + 3 < o1; o += 4) {
      int wo = (o - wRow0) * in;
      int b = 0;
      for (; b + 3 < rows; b += 4) block4x4(x, b, in, w, wo, y, yStride, yOff + o, add);
      for (; b < rows; b++) block4x1(x, b, in, w, wo, y, yStride, yOff + o, add);
    }
    for (; o < o1; o++)
      for (int b = 0; b < rows; b++) {
        FloatVector a = FloatVector.zero(S);
        int wo = (o - wRow0) * in, xo = b * in, bound = S.loopBound(in), i = 0;
        for (; i < bound; i += S.length())
          a = FloatVector.fromArray(S, x, xo + i).fma(FloatVector.fromArray(S, w, wo + i), a);
        put(
            y,
            b * yStride + yOff + o,
            add,
            a.reduceLanes(VectorOperators.ADD),
            x,
            xo,
            w,
            wo,
            i,
            in);
      }
  }

  private static void block4x4(
      float[] x, int b, int in, float[] w, int wo, float[] y, int yStride, int yo, boolean add) {
    int w0 = wo, w1 = w0 + in, w2 = w1 + in, w3 = w2 + in;
    int x0 = b * in, x1 = x0 + in, x2 = x1 + in, x3 = x2 + in;
    FloatVector a00 = FloatVector.zero(S), a01 = a00, a02 = a00, a03 = a00;
    FloatVector a10 = a00, a11 = a00, a12 = a00, a13 = a00;
    FloatVector a20 = a00, a21 = a00, a22 = a00, a23 = a00;
    FloatVector a30 = a00, a31 = a00, a32 = a00, a33 = a00;
    int bound = S.loopBound(in), i = 0;
    for (; i < bound; i += S.length()) {
      FloatVector v0 = FloatVector.fromArray(S, w, w0 + i);
      FloatVector v1 = FloatVector.fromArray(S, w, w1 + i);
      FloatVector v2 = FloatVector.fromArray(S, w, w2 + i);
      FloatVector v3 = FloatVector.fromArray(S, w, w3 + i);
      FloatVector u = FloatVector.fromArray(S, x, x0 + i);
      a00 = u.fma(v0, a00);
      a01 = u.fma(v1, a01);
      a02 = u.fma(v2, a02);
      a03 = u.fma(v3, a03);
      u = FloatVector.fromArray(S, x, x1 + i);
      a10 = u.fma(v0, a10);
      a11 = u.fma(v1, a11);
      a12 = u.fma(v2, a12);
      a13 = u.fma(v3, a13);
      u = FloatVector.fromArray(S, x, x2 + i);
      a20 = u.fma(v0, a20);
      a21 = u.fma(v1, a21);
      a22 = u.fma(v2, a22);
      a23 = u.fma(v3, a23);
      u = FloatVector.fromArray(S, x, x3 + i);
      a30 = u.fma(v0, a30);
      a31 = u.fma(v1, a31);
      a32 = u.fma(v2, a32);
      a33 = u.fma(v3, a33);
    }
    int y0 = b * yStride + yo, y1 = y0 + yStride, y2 = y1 + yStride, y3 = y2 + yStride;
    put(y, y0, add, a00.reduceLanes(VectorOperators.ADD), x, x0, w, w0, i, in);
    put(y, y0 + 1, add, a01.reduceLanes(VectorOperators.ADD), x, x0, w, w1, i, in);
    put(y, y0 + 2, add, a02.reduceLanes(VectorOperators.ADD), x, x0, w, w2, i, in);
    put(y, y0 + 3, add, a03.reduceLanes(VectorOperators.ADD), x, x0, w, w3, i, in);
    put(y, y1, add, a10.reduceLanes(VectorOperators.ADD), x, x1, w, w0, i, in);
    put(y, y1 + 1, add, a11.reduceLanes(VectorOperators.ADD), x, x1, w, w1, i, in);
    put(y, y1 + 2, add, a12.reduceLanes(VectorOperators.ADD), x, x1, w, w2, i, in);
    put(y, y1 + 3, add, a13.reduceLanes(VectorOperators.ADD), x, x1, w, w3, i, in);
    put(y, y2, add, a20.reduceLanes(VectorOperators.ADD), x, x2, w, w0, i, in);
    put(y, y2 + 1, add, a21.reduceLanes(VectorOperators.ADD), x, x2, w, w1, i, in);
    put(y, y2 + 2, add, a22.reduceLanes(VectorOperators.ADD), x, x2, w, w2, i, in);
    put(y, y2 + 3, add, a23.reduceLanes(VectorOperators.ADD), x, x2, w, w3, i, in);
    put(y, y3, add, a30.reduceLanes(VectorOperators.ADD), x, x3, w, w0, i, in);
    put(y, y3 + 1, add, a31.reduceLanes(VectorOperators.ADD), x, x3, w, w1, i, in);
    put(y, y3 + 2, add, a32.reduceLanes(VectorOperators.ADD), x, x3, w, w2, i, in);
    put(y, y3 + 3, add, a33.reduceLanes(VectorOperators.ADD), x, x3, w, w3, i, in);
  }

  private static void block4x1(
      float[] x, int b, int in, float[] w, int wo, float[] y, int yStride, int yo, boolean add) {
    int w0 = wo, w1 = w0 + in, w2 = w1 + in, w3 = w2 + in, x0 = b * in;
    FloatVector a0 = FloatVector.zero(S), a1 = a0, a2 = a0, a3 = a0;
    int bound = S.loopBound(in), i = 0;
    for (; i < bound; i += S.length()) {
      FloatVector u = FloatVector.fromArray(S, x, x0 + i);
      a0 = u.fma(FloatVector.fromArray(S, w, w0 + i), a0);
      a1 = u.fma(FloatVector.fromArray(S, w, w1 + i), a1);
      a2 = u.fma(FloatVector.fromArray(S, w, w2 + i), a2);
      a3 = u.fma(FloatVector.fromArray(S, w, w3 + i), a3);
    }
    int y0 = b * yStride + yo;
    put(y, y0, add, a0.reduceLanes(VectorOperators.ADD), x, x0, w, w0, i, in);
    put(y, y0 + 1, add, a1.reduceLanes(VectorOperators.ADD), x, x0, w, w1, i, in);
    put(y, y0 + 2, add, a2.reduceLanes(VectorOperators.ADD), x, x0, w, w2, i, in);
    put(y, y0 + 3, add, a3.reduceLanes(VectorOperators.ADD), x, x0, w, w3, i, in);
  }

  /**
   * A reduced {@code s} plus the scalar tail {@code [from, in)}, stored or added. Takes the sum,
   * not the vector: a vector passed to a call C2 does not inline is boxed on the heap.
   */
  private static void put(
      float[] y,
      int yi,
      boolean add,
      float s,
      float[] x,
      int xo,
      float[] w,
      int wo,
      int from,
      int in) {
    for (int i = from; i < in; i++) s += x[xo + i] * w[wo + i];
    y[yi] = add ? y[yi] + s : s;
  }
}
