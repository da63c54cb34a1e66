package dev.troupe.engine.cpu;

/**
 * Element-wise and per-row steps on row-major float arrays: the Vector API versions ({@link
 * VecMath}) when available, plain Java otherwise.
 */
final class Kernels {
  private static final boolean V = VectorSupport.AVAILABLE;

  private Kernels() {}

  static float dot(float[] a, int ao, float[] b, int bo, int n) {
    if (V) return VecMath.dot(a, ao, b, bo, n);
    float s = 0;
    for (int i = 0; i < n; i++) s += a[ao + i] * b[bo + i];
    return s;
  }

  /** {@code 1 / sqrt(mean(x²) + eps)} of {@code x[off .. off+n)}. */
  static float invRms(float[] x, int off, int n, float eps) {
    double ss;
    if (V) ss = VecMath.sumSquares(x, off, n);
    else {
      ss = 0;
      for (int i = 0; i < n; i++) ss += x[off + i] * x[off + i];
    }
    return (float) (1.0 / Math.sqrt(ss / n + eps));
  }

  /** RMSNorm of row {@code x[xo .. xo+n)} times {@code w}, into {@code dst} in its layout. */
  static void normRow(
      float[] x, int xo, int n, float[] w, float eps, float[] dst, int dOff, boolean packed) {
    float inv = invRms(x, xo, n, eps);
    if (!packed) {
      for (int i = 0; i < n; i++) dst[dOff + i] = x[xo + i] * inv * w[i];
      return;
    }
    int half = (n + 1) / 2;
    for (int k = 0; k < n / 2; k++) {
      dst[dOff + k] = x[xo + 2 * k] * inv * w[2 * k];
      dst[dOff + half + k] = x[xo + 2 * k + 1] * inv * w[2 * k + 1];
    }
    if ((n & 1) == 1) {
      dst[dOff + half - 1] = x[xo + n - 1] * inv * w[n - 1];
      dst[dOff + 2 * half - 1] = 0f;
    }
  }

  /** RMSNorm of {@code x[off .. off+n)} in place (per-head q/k norm). */
  static void normInPlace(float[] x, int off, int n, float[] w, float eps) {
    float inv = invRms(x, off, n, eps);
    for (int i = 0; i < n; i++) x[off + i] = x[off + i] * inv * w[i];
  }

  /** {@code s[i] = exp(s[i] − max)} for i in [from, to); returns their sum. */
  static float expShift(float[] s, int from, int to, float max) {
    if (V) return VecMath.expShift(s, from, to, max);
    float sum = 0;
    for (int i = from; i < to; i++) sum += s[i] = (float) Math.exp(s[i] - max);
    return sum;
  }

  /**
   * {@code silu(g) · u} of {@code n} elements into {@code tmp[0..n)}, then into {@code dst} at
   * element offset {@code j0} of an {@code inter}-wide row in its layout.
   */
  static void swiglu(
      float[] g,
      int go,
      float[] u,
      int uo,
      int n,
      float[] tmp,
      float[] dst,
      int dRow,
      int j0,
      int inter,
      boolean packed,
      boolean round) {
    if (V) VecMath.swiglu(g, go, u, uo, tmp, 0, n);
    else
      for (int i = 0; i < n; i++) {
        float v = g[go + i];
        tmp[i] = v / (1f + (float) Math.exp(-v)) * u[uo + i];
      }
    if (round) roundToBf16(tmp, 0, n);
    if (!packed) System.arraycopy(tmp, 0, dst, dRow + j0, n);
    else for (int i = 0; i < n; i++) dst[dRow + Activations.index(j0 + i, inter, true)] = tmp[i];
  }

  /**
   * {@code a[off, off + n)} rounded to BF16 in place (a BF16 product's input, {@link Bf16Gemm}).
   */
  static void roundToBf16(float[] a, int off, int n) {
    if (V) Vec32.roundToBf16(a, off, n);
    else for (int i = 0; i < n; i++) a[off + i] = Scalar16.roundToBf16(a[off + i]);
  }
}
