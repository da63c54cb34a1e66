package dev.troupe.training.nd4j;

import dev.troupe.engine.ModelConfig;

/** RoPE inverse frequencies, with Llama 3 {@code rope_scaling} when the config has it. */
final class RotaryFrequencies {
  private RotaryFrequencies() {}

  /** inv_freq[i] = θ^(−2i/d) for i < d/2, then Llama 3's wavelength-dependent rescaling. */
  static double[] inverseFrequencies(ModelConfig config) {
    int d = config.headDim();
    double[] f = new double[d / 2];
    for (int i = 0; i < f.length; i++) f[i] = 1.0 / Math.pow(config.ropeTheta(), (2.0 * i) / d);
    ModelConfig.RopeScaling s = config.ropeScaling();
    if (s == null || !"llama3".equals(s.type())) return f;
    double oldLen = s.originalMaxPositionEmbeddings();
    double lowWavelen = oldLen / s.lowFreqFactor();
    double highWavelen = oldLen / s.highFreqFactor();
    for (int i = 0; i < f.length; i++) {
      double wavelen = 2 * Math.PI / f[i];
      if (wavelen < highWavelen) continue; // high frequencies unchanged
      if (wavelen > lowWavelen) {
        f[i] /= s.factor();
      } else {
        double smooth =
            (oldLen / wavelen - s.lowFreqFactor()) / (s.highFreqFactor() - s.lowFreqFactor());
        f[i] = (1 - smooth) * f[i] / s.factor() + smooth * f[i];
      }
    }
    return f;
  }
}
