package dev.troupe.engine.model;

import dev.troupe.engine.ModelConfig;

/**
 * Rotary position embedding of a model, as transformers computes it: inverse frequencies {@code
 * θ^(−2i/d)} for {@code i < d/2} (Llama 3 {@code rope_scaling} applied, as {@code
 * _compute_llama3_parameters}), angle {@code p · inv_freq[i]}, and the {@code rotate_half}
 * convention: element {@code i} of a head pairs with {@code i + d/2}. Angles are computed in double
 * precision and rounded once, so every backend rotating with these tables agrees.
 */
public final class RopeTables {
  private final int headDim;
  private final double[] invFreq;

  private RopeTables(int headDim, double[] invFreq) {
    this.headDim = headDim;
    this.invFreq = invFreq;
  }

  /** The tables of {@code c} ({@code head_dim}, {@code rope_theta}, {@code rope_scaling}). */
  public static RopeTables of(ModelConfig c) {
    int d = c.headDim();
    double[] f = new double[d / 2];
    for (int i = 0; i < f.length; i++) f[i] = 1.0 / Math.pow(c.ropeTheta(), (2.0 * i) / d);
    ModelConfig.RopeScaling s = c.ropeScaling();
    if (s != null && "llama3".equals(s.type())) {
      double old = s.originalMaxPositionEmbeddings();
      double lowWavelen = old / s.lowFreqFactor();
      double highWavelen = old / s.highFreqFactor();
      for (int i = 0; i < f.length; i++) {
        double wavelen = 2 * Math.PI / f[i];
        if (wavelen > lowWavelen) {
          f[i] /= s.factor();
        } else if (wavelen >= highWavelen) {
          // medium band: interpolate between scaled and unscaled
          double smooth =
              (old / wavelen - s.lowFreqFactor()) / (s.highFreqFactor() - s.lowFreqFactor());
          f[i] = (1 - smooth) * f[i] / s.factor() + smooth * f[i];
        }
      }
    }
    return new RopeTables(d, f);
  }

  public int headDim() {
    return headDim;
  }

  /** {@code d / 2}: the number of rotated pairs (and of angles per position). */
  public int pairs() {
    return invFreq.length;
  }

  /** The inverse frequencies, {@code [d/2]} (a copy). */
  public double[] inverseFrequencies() {
    return invFreq.clone();
  }

  /** {@code cos} and {@code sin} of position {@code pos}'s angles into {@code [d/2]} arrays. */
  public void angles(int pos, float[] cos, float[] sin) {
    for (int i = 0; i < invFreq.length; i++) {
      double a = pos * invFreq[i];
      cos[i] = (float) Math.cos(a);
      sin[i] = (float) Math.sin(a);
    }
  }

  /**
   * Position {@code pos}'s {@code cos} into {@code cs[at .. at+d/2)} and its {@code sin} into
   * {@code cs[at+d/2 .. at+d)}: the same values as {@link #angles(int, float[], float[])}.
   */
  public void angles(int pos, float[] cs, int at) {
    int half = invFreq.length;
    for (int i = 0; i < half; i++) {
      double a = pos * invFreq[i];
      cs[at + i] = (float) Math.cos(a);
      cs[at + half + i] = (float) Math.sin(a);
    }
  }

  /** As {@link #angles(int, float[], float[])}, unrounded (training's double-precision checks). */
  public void angles(int pos, double[] cos, double[] sin) {
    for (int i = 0; i < invFreq.length; i++) {
      double a = pos * invFreq[i];
      cos[i] = Math.cos(a);
      sin[i] = Math.sin(a);
    }
  }

  /**
   * Row-major {@code [positions, d/2]} tables of positions {@code 0 ..}: {@code {cos, sin}}, for a
   * backend that uploads them once.
   */
  public float[][] table(int positions) {
    int half = invFreq.length;
    float[] cos = new float[positions * half], sin = new float[positions * half];
    float[] c = new float[half], s = new float[half];
    for (int p = 0; p < positions; p++) {
      angles(p, c, s);
      System.arraycopy(c, 0, cos, p * half, half);
      System.arraycopy(s, 0, sin, p * half, half);
    }
    return new float[][] {cos, sin};
  }

  /**
   * Rotates one head {@code x[off .. off+d)} in place: {@code (a, b) → (a cos − b sin, b cos + a
   * sin)} for the pairs {@code (x[i], x[i + d/2])}, with the position's {@code cos} at {@code cs[at
   * .. at+d/2)} and its {@code sin} right after (a step's table of its tokens' angles, {@link
   * #angles(int, float[], int)}).
   */
  public static void rotate(float[] x, int off, int d, float[] cs, int at) {
    int half = d / 2;
    for (int i = 0; i < half; i++) {
      float a = x[off + i], b = x[off + half + i], c = cs[at + i], s = cs[at + half + i];
      x[off + i] = a * c - b * s;
      x[off + half + i] = b * c + a * s;
    }
  }
}
