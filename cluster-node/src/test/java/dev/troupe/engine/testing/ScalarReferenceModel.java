package dev.troupe.engine.testing;

import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.model.DType;
import dev.troupe.engine.model.WeightSource;

/**
 * The transformer forward written as plainly as possible, in double precision, over a whole
 * sequence at once (no KV cache, no batching, no ND4J): the independent reference the ND4J runner
 * is checked against. Follows transformers' modeling_llama / modeling_qwen2 / modeling_qwen3.
 */
public final class ScalarReferenceModel {
  private final ModelConfig c;
  private final WeightSource w;
  private final boolean bf16Inputs, bf16Head;

  public ScalarReferenceModel(ModelConfig c, WeightSource w) {
    this(c, w, false);
  }

  /**
   * With {@code bf16Inputs}, the inputs of every layer product (q/k/v, o, gate/up, down; not the LM
   * head) are rounded to BF16 first, as a BF16 matmul of PyTorch or oneDNN rounds its activations.
   */
  public ScalarReferenceModel(ModelConfig c, WeightSource w, boolean bf16Inputs) {
    this(c, w, bf16Inputs, false);
  }

  /** With {@code bf16Head}, the LM head's inputs are rounded to BF16 too. */
  public ScalarReferenceModel(ModelConfig c, WeightSource w, boolean bf16Inputs, boolean bf16Head) {
    this.c = c;
    this.w = w;
    this.bf16Inputs = bf16Inputs;
    this.bf16Head = bf16Head;
  }

  /** Logits of every position of {@code tokens}: {@code [T][vocab]}. */
  public float[][] logits(int[] tokens) {
    int T = tokens.length,
        H = c.hiddenSize(),
        d = c.headDim(),
        nH = c.numHeads(),
        nKv = c.numKvHeads();
    double[] embed = d(w.floats("model.embed_tokens.weight"));
    double[][] x = new double[T][H];
    for (int t = 0; t < T; t++) System.arraycopy(embed, tokens[t] * H, x[t], 0, H);
    for (int l = 0; l < c.numLayers(); l++) {
      String p = "model.layers." + l + ".";
      // attention
      double[][] h = norm(x, d(w.floats(p + "input_layernorm.weight")));
      double[][] q = matmul(h, p + "self_attn.q_proj");
      double[][] k = matmul(h, p + "self_attn.k_proj");
      double[][] v = matmul(h, p + "self_attn.v_proj");
      for (int t = 0; t < T; t++) {
        if (c.qkNorm()) {
          headNorm(q[t], nH, d, d(w.floats(p + "self_attn.q_norm.weight")));
          headNorm(k[t], nKv, d, d(w.floats(p + "self_attn.k_norm.weight")));
        }
        rope(q[t], nH, t);
        rope(k[t], nKv, t);
      }
      double[][] attn = new double[T][nH * d];
      for (int t = 0; t < T; t++) {
        for (int hh = 0; hh < nH; hh++) {
          int kvh = hh / (nH / nKv);
          double[] s = new double[t + 1];
          double max = Double.NEGATIVE_INFINITY;
          // Mistral's sliding window: only the last W positions (j > t - W) are visible
          int lo = c.slidingWindow() > 0 ? Math.max(0, t - c.slidingWindow() + 1) : 0;
          for (int j = lo; j <= t; j++) {
            double dot = 0;
            for (int i = 0; i < d; i++) dot += q[t][hh * d + i] * k[j][kvh * d + i];
            s[j] = dot / Math.sqrt(d);
            max = Math.max(max, s[j]);
          }
          double sum = 0;
          for (int j = lo; j <= t; j++) sum += s[j] = Math.exp(s[j] - max);
          for (int j = lo; j <= t; j++)
            for (int i = 0; i < d; i++) attn[t][hh * d + i] += s[j] / sum * v[j][kvh * d + i];
        }
      }
      add(x, matmul(attn, p + "self_attn.o_proj"));
      // MLP
      h = norm(x, d(w.floats(p + "post_attention_layernorm.weight")));
      double[][] g = matmul(h, p + "mlp.gate_proj");
      double[][] u = matmul(h, p + "mlp.up_proj");
      for (int t = 0; t < T; t++)
        for (int i = 0; i < g[t].length; i++)
          g[t][i] = g[t][i] / (1 + Math.exp(-g[t][i])) * u[t][i];
      add(x, matmul(g, p + "mlp.down_proj"));
    }
    double[][] h = norm(x, d(w.floats("model.norm.weight")));
    double[][] logits = matmul(h, c.tieWordEmbeddings() ? "model.embed_tokens" : "lm_head");
    float[][] out = new float[T][];
    for (int t = 0; t < T; t++) {
      out[t] = new float[logits[t].length];
      for (int i = 0; i < out[t].length; i++) out[t][i] = (float) logits[t][i];
    }
    return out;
  }

  /** x [T, in] · Wᵀ (+ bias), W [out, in] from {@code module.weight}. */
  private double[][] matmul(double[][] x, String module) {
    float[] wm = w.floats(module + ".weight");
    float[] bias = w.contains(module + ".bias") ? w.floats(module + ".bias") : null;
    int in = x[0].length, out = wm.length / in;
    boolean round = bf16Inputs && (bf16Head || module.startsWith("model.layers."));
    double[][] y = new double[x.length][out];
    for (int t = 0; t < x.length; t++)
      for (int o = 0; o < out; o++) {
        double s = bias == null ? 0 : bias[o];
        for (int i = 0; i < in; i++)
          s +=
              (round ? DType.bf16ToFloat(DType.floatToBf16((float) x[t][i])) : x[t][i])
                  * wm[o * in + i];
        y[t][o] = s;
      }
    return y;
  }

  private double[][] norm(double[][] x, double[] weight) {
    double[][] y = new double[x.length][];
    for (int t = 0; t < x.length; t++) {
      y[t] = x[t].clone();
      normInPlace(y[t], 0, y[t].length, weight);
    }
    return y;
  }

  private void headNorm(double[] v, int heads, int d, double[] weight) {
    for (int hh = 0; hh < heads; hh++) normInPlace(v, hh * d, d, weight);
  }

  private void normInPlace(double[] v, int off, int n, double[] weight) {
    double ss = 0;
    for (int i = 0; i < n; i++) ss += v[off + i] * v[off + i];
    double inv = 1 / Math.sqrt(ss / n + c.rmsNormEps());
    for (int i = 0; i < n; i++) v[off + i] = v[off + i] * inv * weight[i];
  }

  /** rotate_half RoPE at position {@code pos}, with Llama 3 frequency scaling when configured. */
  private void rope(double[] v, int heads, int pos) {
    int d = c.headDim(), half = d / 2;
    for (int i = 0; i < half; i++) {
      double f = Math.pow(c.ropeTheta(), -2.0 * i / d);
      ModelConfig.RopeScaling s = c.ropeScaling();
      if (s != null) {
        double wl = 2 * Math.PI / f;
        double lowWl = s.originalMaxPositionEmbeddings() / s.lowFreqFactor();
        double highWl = s.originalMaxPositionEmbeddings() / s.highFreqFactor();
        if (wl > lowWl) f = f / s.factor();
        else if (wl >= highWl) {
          double sm =
              (s.originalMaxPositionEmbeddings() / wl - s.lowFreqFactor())
                  / (s.highFreqFactor() - s.lowFreqFactor());
          f = (1 - sm) * f / s.factor() + sm * f;
        }
      }
      double cs = Math.cos(pos * f), sn = Math.sin(pos * f);
      for (int hh = 0; hh < heads; hh++) {
        int a = hh * d + i, b = a + half;
        double x1 = v[a], x2 = v[b];
        v[a] = x1 * cs - x2 * sn;
        v[b] = x2 * cs + x1 * sn;
      }
    }
  }

  private static void add(double[][] x, double[][] y) {
    for (int t = 0; t < x.length; t++) for (int i = 0; i < x[t].length; i++) x[t][i] += y[t][i];
  }

  private static double[] d(float[] f) {
    double[] r = new double[f.length];
    for (int i = 0; i < f.length; i++) r[i] = f[i];
    return r;
  }
}
