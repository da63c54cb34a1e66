package dev.troupe.engine.cuda;

import dev.troupe.engine.ModelConfig;

/**
 * RoPE cos/sin tables {@code [positions, headDim/2]} computed on the host in double precision and
 * stored as float, exactly as the CPU runner computes its angles (transformers' default and Llama 3
 * frequency scaling), so the device never evaluates a trigonometric function of a large angle in
 * single precision.
 */
final class RopeTables {
  private RopeTables() {}

  /** {@code θ^(-2i/d)} for i in [0, d/2), with Llama 3 scaling when configured. */
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
        if (wavelen > lowWavelen) f[i] = f[i] / s.factor();
        else if (wavelen >= highWavelen) {
          double smooth =
              (s.originalMaxPositionEmbeddings() / wavelen - s.lowFreqFactor())
                  / (s.highFreqFactor() - s.lowFreqFactor());
          f[i] = (1 - smooth) * f[i] / s.factor() + smooth * f[i];
        }
      }
    }
    return f;
  }

  /** {cos, sin}, each {@code [positions · headDim/2]} row-major. */
  static float[][] cosSin(ModelConfig c, int positions) {
    double[] inv = inverseFrequencies(c);
    int half = inv.length;
    float[] cos = new float[positions * half], sin = new float[positions * half];
    for (int p = 0; p < positions; p++)
      for (int i = 0; i < half; i++) {
        double a = p * inv[i];
        cos[p * half + i] = (float) Math.cos(a);
        sin[p * half + i] = (float) Math.sin(a);
      }
    return new float[][] {cos, sin};
  }
}
