package dev.troupe.engine.cpu;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * Vector API element-wise loops of {@link Kernels} (only touched when {@link
 * VectorSupport#AVAILABLE}).
 *
 * <p>{@link #exp} is ours, not the JDK's {@code VectorOperators.EXP}: that one is a different
 * function before and after C2 compiles the caller ({@code Math.exp} per lane when interpreted, an
 * SVML routine when compiled, a last-bit apart), so a softmax or SwiGLU computed while the JIT was
 * warming up differed from the same one computed later, and a sequence's logits from one step to
 * another with nothing else changed (the likely cause of a failure of {@code
 * CpuModelRunnerTest.batchedEqualsUnbatched} seen once under load and not reproduced). Built from
 * lane-wise IEEE operations only (add, multiply, fused multiply-add, integer bit operations), which
 * Java defines exactly, it gives the same bits in every JIT state; within 2 ulp of {@code Math.exp}
 * ({@code VecMathTest}).
 */
final class VecMath {
  private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;

  private VecMath() {}

  static float dot(float[] a, int ao, float[] b, int bo, int n) {
    FloatVector acc = FloatVector.zero(S);
    int bound = S.loopBound(n), i = 0;
    for (; i < bound; i += S.length())
      acc = FloatVector.fromArray(S, a, ao + i).fma(FloatVector.fromArray(S, b, bo + i), acc);
    float s = acc.reduceLanes(VectorOperators.ADD);
    for (; i < n; i++) s += a[ao + i] * b[bo + i];
    return s;
  }

  static float sumSquares(float[] x, int off, int n) {
    return dot(x, off, x, off, n);
  }

  /** {@code s[i] = exp(s[i] − max)} for i in [from, to); returns their sum. */
  static float expShift(float[] s, int from, int to, float max) {
    FloatVector acc = FloatVector.zero(S);
    int i = from, bound = from + S.loopBound(to - from);
    for (; i < bound; i += S.length()) {
      FloatVector e = exp(FloatVector.fromArray(S, s, i).sub(max));
      e.intoArray(s, i);
      acc = acc.add(e);
    }
    float sum = acc.reduceLanes(VectorOperators.ADD);
    for (; i < to; i++) sum += s[i] = exp(s[i] - max);
    return sum;
  }

  /** {@code dst[i] = silu(g[go + i]) · u[uo + i]} for i in [0, n). */
  static void swiglu(float[] g, int go, float[] u, int uo, float[] dst, int d0, int n) {
    int bound = S.loopBound(n), i = 0;
    for (; i < bound; i += S.length()) {
      FloatVector v = FloatVector.fromArray(S, g, go + i);
      v.div(exp(v.neg()).add(1f)).mul(FloatVector.fromArray(S, u, uo + i)).intoArray(dst, d0 + i);
    }
    for (; i < n; i++) {
      float v = g[go + i];
      dst[d0 + i] = v / (1f + exp(-v)) * u[uo + i];
    }
  }

  // exp(x) = 2^k · e^r, k = round(x / ln 2), r = x − k·ln 2 (ln 2 in two parts, Cody–Waite), e^r
  // by its Taylor polynomial to degree 7 (|r| ≤ ln 2 / 2: truncation under 2e-9 relative)
  private static final float LOG2E = 1.44269504f, LN2_HI = 0.693359375f, LN2_LO = -2.12194440e-4f;
  private static final float ROUND = 12582912f; // 1.5 · 2²³: adding it rounds to an integer
  // k = round(x / ln 2) stays in [−126, 127], a normal exponent: above MAX_X (e^x > 2.4e38, near
  // float's 3.4e38 limit) the result is +∞, below MIN_X (e^x < 1.2e-38) it is 0
  private static final float MAX_X = 88.37626f, MIN_X = -87.33654f;
  private static final float C2 = 1 / 2f, C3 = 1 / 6f, C4 = 1 / 24f, C5 = 1 / 120f;
  private static final float C6 = 1 / 720f, C7 = 1 / 5040f;

  /** e^x per lane: +∞ above {@link #MAX_X}, 0 below {@link #MIN_X}, NaN for NaN. */
  static FloatVector exp(FloatVector x) {
    FloatVector c = x.max(MIN_X).min(MAX_X); // NaN stays NaN
    FloatVector t = c.fma(LOG2E, ROUND);
    FloatVector k = t.sub(ROUND);
    FloatVector r = k.fma(FloatVector.broadcast(S, -LN2_HI), c);
    r = k.fma(FloatVector.broadcast(S, -LN2_LO), r);
    FloatVector p = r.fma(C7, C6);
    p = p.fma(r, FloatVector.broadcast(S, C5));
    p = p.fma(r, FloatVector.broadcast(S, C4));
    p = p.fma(r, FloatVector.broadcast(S, C3));
    p = p.fma(r, FloatVector.broadcast(S, C2));
    FloatVector one = FloatVector.broadcast(S, 1f);
    p = p.fma(r, one);
    p = p.fma(r, one);
    // 2^k: k + 127 into the exponent bits
    FloatVector scale =
        t.reinterpretAsInts()
            .sub(Float.floatToRawIntBits(ROUND) - 127)
            .lanewise(VectorOperators.LSHL, 23)
            .reinterpretAsFloats();
    FloatVector e = p.mul(scale);
    e =
        e.blend(
            FloatVector.broadcast(S, Float.POSITIVE_INFINITY),
            x.compare(VectorOperators.GT, MAX_X));
    return e.blend(FloatVector.zero(S), x.compare(VectorOperators.LT, MIN_X));
  }

  /** The scalar {@link #exp}, the same operations in the same order (loop tails). */
  static float exp(float x) {
    if (x > MAX_X) return Float.POSITIVE_INFINITY;
    if (x < MIN_X) return 0f;
    if (x != x) return x;
    float t = Math.fma(x, LOG2E, ROUND);
    float k = t - ROUND;
    float r = Math.fma(k, -LN2_HI, x);
    r = Math.fma(k, -LN2_LO, r);
    float p = Math.fma(r, C7, C6);
    p = Math.fma(p, r, C5);
    p = Math.fma(p, r, C4);
    p = Math.fma(p, r, C3);
    p = Math.fma(p, r, C2);
    p = Math.fma(p, r, 1f);
    p = Math.fma(p, r, 1f);
    float scale =
        Float.intBitsToFloat(
            (Float.floatToRawIntBits(t) - (Float.floatToRawIntBits(ROUND) - 127)) << 23);
    return p * scale;
  }
}
