package dev.troupe.engine.cpu;

/** Element-wise and per-row kernels on row-major float arrays. */
final class Kernels {
  private Kernels() {}

  /** Per row of {@code x [rows, n]}: {@code x / sqrt(mean(x²) + eps) · w}, into a new array. */
  static float[] rmsNorm(float[] x, int rows, int n, float[] w, float eps) {
    float[] y = new float[rows * n];
    for (int r = 0; r < rows; r++) {
      int o = r * n;
      float inv = invRms(x, o, n, eps);
      for (int i = 0; i < n; i++) y[o + i] = x[o + i] * inv * w[i];
    }
    return y;
  }

  /** RMSNorm of {@code x[off .. off+n)} in place (per-head q/k norm). */
  static void rmsNormInPlace(float[] x, int off, int n, float[] w, float eps) {
    float inv = invRms(x, off, n, eps);
    for (int i = 0; i < n; i++) x[off + i] = x[off + i] * inv * w[i];
  }

  private static float invRms(float[] x, int off, int n, float eps) {
    double ss = 0;
    for (int i = 0; i < n; i++) ss += x[off + i] * x[off + i];
    return (float) (1.0 / Math.sqrt(ss / n + eps));
  }

  /** {@code x[off + i] += b[i]} for i in [0, n). */
  static void addInPlace(float[] x, int off, float[] b, int n) {
    for (int i = 0; i < n; i++) x[off + i] += b[i];
  }

  /** {@code x += y}. */
  static void addInPlace(float[] x, float[] y) {
    for (int i = 0; i < x.length; i++) x[i] += y[i];
  }

  /** From {@code gu [rows, 2I]} (gate then up): {@code silu(gate) · up}, {@code [rows, I]}. */
  static float[] swiglu(float[] gu, int rows, int inter) {
    float[] a = new float[rows * inter];
    for (int r = 0; r < rows; r++) {
      int g = r * 2 * inter, o = r * inter;
      for (int i = 0; i < inter; i++) {
        float v = gu[g + i];
        a[o + i] = v / (1f + (float) Math.exp(-v)) * gu[g + inter + i];
      }
    }
    return a;
  }

  /** Dot product of {@code a[ao .. ao+n)} and {@code b[bo .. bo+n)}, four accumulators. */
  static float dot(float[] a, int ao, float[] b, int bo, int n) {
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int i = 0;
    for (; i + 3 < n; i += 4) {
      s0 += a[ao + i] * b[bo + i];
      s1 += a[ao + i + 1] * b[bo + i + 1];
      s2 += a[ao + i + 2] * b[bo + i + 2];
      s3 += a[ao + i + 3] * b[bo + i + 3];
    }
    for (; i < n; i++) s0 += a[ao + i] * b[bo + i];
    return (s0 + s1) + (s2 + s3);
  }

  /** {@code y[yo ..] += s · x[xo ..]} over n elements. */
  static void axpy(float s, float[] x, int xo, float[] y, int yo, int n) {
    for (int i = 0; i < n; i++) y[yo + i] += s * x[xo + i];
  }
}
