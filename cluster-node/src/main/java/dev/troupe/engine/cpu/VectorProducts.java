package dev.troupe.engine.cpu;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * The Vector API inner loops of {@link DecodeKernels}. Kept in its own class so that nothing
 * touches {@code jdk.incubator.vector} unless {@link DecodeKernels} has checked the module is
 * there.
 *
 * <p>Blocking: four weight rows × four activation rows at a time (16 accumulators + 8 loaded
 * vectors fit AVX-512's 32 registers). The four weight rows ({@code 4·in} floats) stay in L1 while
 * every activation row passes over them, so each weight row is read from memory once per product
 * whatever the batch; the activations ({@code rows·in} floats) stay in L2.
 */
final class VectorProducts {
  private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;

  private VectorProducts() {}

  static int lanes() {
    return S.length();
  }

  /** {@code y[b·out + o] = Σ_i x[b·in + i] · w[o·in + i]} for {@code o ∈ [o0, o1)}, all b. */
  static void range(float[] x, int rows, int in, float[] w, int out, float[] y, int o0, int o1) {
    int o = o0;
    for (; o + 3 < o1; o += 4) {
      int b = 0;
      for (; b + 3 < rows; b += 4) block4x4(x, b, in, w, o, out, y);
      for (; b < rows; b++) block4x1(x, b, in, w, o, out, y);
    }
    for (; o < o1; o++) {
      for (int b = 0; b < rows; b++) y[b * out + o] = dot(x, b * in, w, o * in, in);
    }
  }

  private static void block4x4(float[] x, int b, int in, float[] w, int o, int out, float[] y) {
    int w0 = o * in, w1 = w0 + in, w2 = w1 + in, w3 = w2 + in;
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
    int y0 = b * out + o, y1 = y0 + out, y2 = y1 + out, y3 = y2 + out;
    y[y0] = sum(a00, x, x0, w, w0, i, in);
    y[y0 + 1] = sum(a01, x, x0, w, w1, i, in);
    y[y0 + 2] = sum(a02, x, x0, w, w2, i, in);
    y[y0 + 3] = sum(a03, x, x0, w, w3, i, in);
    y[y1] = sum(a10, x, x1, w, w0, i, in);
    y[y1 + 1] = sum(a11, x, x1, w, w1, i, in);
    y[y1 + 2] = sum(a12, x, x1, w, w2, i, in);
    y[y1 + 3] = sum(a13, x, x1, w, w3, i, in);
    y[y2] = sum(a20, x, x2, w, w0, i, in);
    y[y2 + 1] = sum(a21, x, x2, w, w1, i, in);
    y[y2 + 2] = sum(a22, x, x2, w, w2, i, in);
    y[y2 + 3] = sum(a23, x, x2, w, w3, i, in);
    y[y3] = sum(a30, x, x3, w, w0, i, in);
    y[y3 + 1] = sum(a31, x, x3, w, w1, i, in);
    y[y3 + 2] = sum(a32, x, x3, w, w2, i, in);
    y[y3 + 3] = sum(a33, x, x3, w, w3, i, in);
  }

  private static void block4x1(float[] x, int b, int in, float[] w, int o, int out, float[] y) {
    int w0 = o * in, w1 = w0 + in, w2 = w1 + in, w3 = w2 + in, x0 = b * in;
    FloatVector a0 = FloatVector.zero(S), a1 = a0, a2 = a0, a3 = a0;
    int bound = S.loopBound(in), i = 0;
    for (; i < bound; i += S.length()) {
      FloatVector u = FloatVector.fromArray(S, x, x0 + i);
      a0 = u.fma(FloatVector.fromArray(S, w, w0 + i), a0);
      a1 = u.fma(FloatVector.fromArray(S, w, w1 + i), a1);
      a2 = u.fma(FloatVector.fromArray(S, w, w2 + i), a2);
      a3 = u.fma(FloatVector.fromArray(S, w, w3 + i), a3);
    }
    int y0 = b * out + o;
    y[y0] = sum(a0, x, x0, w, w0, i, in);
    y[y0 + 1] = sum(a1, x, x0, w, w1, i, in);
    y[y0 + 2] = sum(a2, x, x0, w, w2, i, in);
    y[y0 + 3] = sum(a3, x, x0, w, w3, i, in);
  }

  private static float dot(float[] x, int xo, float[] w, int wo, int in) {
    FloatVector a = FloatVector.zero(S);
    int bound = S.loopBound(in), i = 0;
    for (; i < bound; i += S.length())
      a = FloatVector.fromArray(S, x, xo + i).fma(FloatVector.fromArray(S, w, wo + i), a);
    return sum(a, x, xo, w, wo, i, in);
  }

  /**
   * Lanes of {@code acc} plus the scalar tail {@code [from, in)} (in not a multiple of the lanes).
   */
  private static float sum(
      FloatVector acc, float[] x, int xo, float[] w, int wo, int from, int in) {
    float s = acc.reduceLanes(VectorOperators.ADD);
    for (int i = from; i < in; i++) s += x[xo + i] * w[wo + i];
    return s;
  }
}
