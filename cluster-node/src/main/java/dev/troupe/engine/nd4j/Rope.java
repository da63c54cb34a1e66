package dev.troupe.engine.nd4j;

import dev.troupe.engine.ModelConfig;

/** Rotary position embedding as transformers applies it ({@code rotate_half}: pairs i, i + d/2). */
final class Rope {
  private Rope() {}

  /** {@code θ^(-2i/d)} for i in [0, d/2), with Llama 3 frequency scaling when configured. */
  static double[] inverseFrequencies(ModelConfig c) {
    int half = c.headDim() / 2;
    double[] f = new double[half];
    for (int i = 0; i < half; i++) f[i] = 1.0 / Math.pow(c.ropeTheta(), (2.0 * i) / c.headDim());
    ModelConfig.RopeScaling s = c.ropeScaling();
    if (s != null && s.type().equals("llama3")) {
      double lowWavelen = s.originalMaxPositionEmbeddings() / s.lowFreqFactor();
      double highWavelen = s.originalMaxPositionEmbeddings() / s.highFreqFactor();
      for (int i = 0; i < half; i++) {
        double wavelen = 2 * Math.PI / f[i];
        if (wavelen > lowWavelen) {
          f[i] = f[i] / s.factor();
        } else if (wavelen >= highWavelen) {
          // medium band: interpolate between scaled and unscaled
          double smooth =
              (s.originalMaxPositionEmbeddings() / wavelen - s.lowFreqFactor())
                  / (s.highFreqFactor() - s.lowFreqFactor());
          f[i] = (1 - smooth) * f[i] / s.factor() + smooth * f[i];
        }
      }
    }
    return f;
  }

  static void angles(double[] invFreq, int pos, float[] cos, float[] sin) {
    for (int i = 0; i < invFreq.length; i++) {
      double a = pos * invFreq[i];
      cos[i] = (float) Math.cos(a);
      sin[i] = (float) Math.sin(a);
    }
  }

  /** Rotates one head {@code x[off .. off+d)} in place. */
  static void rotate(float[] x, int off, int d, float[] cos, float[] sin) {
    int half = d / 2;
    for (int i = 0; i < half; i++) {
      float a = x[off + i], b = x[off + half + i];
      x[off + i] = a * cos[i] - b * sin[i];
      x[off + half + i] = b * cos[i] + a * sin[i];
    }
  }
}
