package dev.troupe.training.nd4j;

import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.model.RopeTables;
import java.util.Map;

/**
 * A deliberately plain, loop-by-loop double-precision decoder (one sequence, causal, no packing)
 * written independently of {@link LoraTransformer}, used as the reference its forward must match.
 * LoRA is applied by merging W + s·B·A into the weights beforehand.
 */
final class ScalarDecoder {
  private final ModelConfig c;
  private final Map<String, float[]> w;

  ScalarDecoder(ModelConfig c, Map<String, float[]> weights) {
    this.c = c;
    this.w = weights;
  }

  /** logprob of tokens[t+1] after tokens[0..t], t < n - 1. */
  double[] logprobs(int[] tokens) {
    int n = tokens.length;
    int h = c.hiddenSize();
    int d = c.headDim();
    double[][] x = new double[n][h];
    float[] emb = w.get("model.embed_tokens.weight");
    for (int t = 0; t < n; t++) for (int i = 0; i < h; i++) x[t][i] = emb[tokens[t] * h + i];
    double[] inv = RopeTables.of(c).inverseFrequencies();
    for (int l = 0; l < c.numLayers(); l++) {
      String p = "model.layers." + l + ".";
      double[][] a = norm(x, w.get(p + "input_layernorm.weight"));
      double[][] q = mat(a, p + "self_attn.q_proj", c.numHeads() * d, h);
      double[][] k = mat(a, p + "self_attn.k_proj", c.numKvHeads() * d, h);
      double[][] v = mat(a, p + "self_attn.v_proj", c.numKvHeads() * d, h);
      for (int t = 0; t < n; t++) {
        for (int hh = 0; hh < c.numHeads(); hh++)
          headPrep(q[t], hh, d, t, inv, p + "self_attn.q_norm.weight");
        for (int hh = 0; hh < c.numKvHeads(); hh++)
          headPrep(k[t], hh, d, t, inv, p + "self_attn.k_norm.weight");
      }
      double[][] att = new double[n][c.numHeads() * d];
      int group = c.numHeads() / c.numKvHeads();
      for (int t = 0; t < n; t++)
        for (int hh = 0; hh < c.numHeads(); hh++) {
          int g = hh / group;
          double[] s = new double[t + 1];
          double max = Double.NEGATIVE_INFINITY;
          for (int j = 0; j <= t; j++) {
            double dot = 0;
            for (int e = 0; e < d; e++) dot += q[t][hh * d + e] * k[j][g * d + e];
            s[j] = dot / Math.sqrt(d);
            max = Math.max(max, s[j]);
          }
          double z = 0;
          for (int j = 0; j <= t; j++) z += s[j] = Math.exp(s[j] - max);
          for (int j = 0; j <= t; j++)
            for (int e = 0; e < d; e++) att[t][hh * d + e] += s[j] / z * v[j][g * d + e];
        }
      double[][] o = mat(att, p + "self_attn.o_proj", h, c.numHeads() * d);
      for (int t = 0; t < n; t++) for (int i = 0; i < h; i++) x[t][i] += o[t][i];
      double[][] b = norm(x, w.get(p + "post_attention_layernorm.weight"));
      double[][] gt = mat(b, p + "mlp.gate_proj", c.intermediateSize(), h);
      double[][] up = mat(b, p + "mlp.up_proj", c.intermediateSize(), h);
      for (int t = 0; t < n; t++)
        for (int i = 0; i < c.intermediateSize(); i++)
          gt[t][i] = gt[t][i] / (1 + Math.exp(-gt[t][i])) * up[t][i];
      double[][] dn = mat(gt, p + "mlp.down_proj", h, c.intermediateSize());
      for (int t = 0; t < n; t++) for (int i = 0; i < h; i++) x[t][i] += dn[t][i];
    }
    double[][] f = norm(x, w.get("model.norm.weight"));
    float[] head = w.containsKey("lm_head.weight") ? w.get("lm_head.weight") : emb;
    double[] out = new double[n];
    for (int t = 0; t + 1 < n; t++) {
      double[] z = new double[c.vocabSize()];
      double max = Double.NEGATIVE_INFINITY;
      for (int vv = 0; vv < z.length; vv++) {
        for (int i = 0; i < h; i++) z[vv] += f[t][i] * head[vv * h + i];
        max = Math.max(max, z[vv]);
      }
      double sum = 0;
      for (double zz : z) sum += Math.exp(zz - max);
      out[t] = z[tokens[t + 1]] - max - Math.log(sum);
    }
    return out;
  }

  private void headPrep(double[] row, int head, int d, int pos, double[] inv, String normName) {
    int o = head * d;
    if (c.qkNorm()) {
      float[] g = w.get(normName);
      double ss = 0;
      for (int e = 0; e < d; e++) ss += row[o + e] * row[o + e];
      double r = 1 / Math.sqrt(ss / d + c.rmsNormEps());
      for (int e = 0; e < d; e++) row[o + e] = row[o + e] * r * g[e];
    }
    int half = d / 2;
    for (int i = 0; i < half; i++) {
      double cs = Math.cos(pos * inv[i]);
      double sn = Math.sin(pos * inv[i]);
      double x1 = row[o + i];
      double x2 = row[o + half + i];
      row[o + i] = x1 * cs - x2 * sn;
      row[o + half + i] = x2 * cs + x1 * sn;
    }
  }

  private double[][] norm(double[][] x, float[] g) {
    double[][] y = new double[x.length][x[0].length];
    for (int t = 0; t < x.length; t++) {
      double ss = 0;
      for (double v : x[t]) ss += v * v;
      double r = 1 / Math.sqrt(ss / x[t].length + c.rmsNormEps());
      for (int i = 0; i < x[t].length; i++) y[t][i] = x[t][i] * r * g[i];
    }
    return y;
  }

  private double[][] mat(double[][] x, String module, int out, int in) {
    float[] wt = w.get(module + ".weight");
    float[] bias = w.get(module + ".bias");
    double[][] y = new double[x.length][out];
    for (int t = 0; t < x.length; t++)
      for (int o = 0; o < out; o++) {
        double s = bias == null ? 0 : bias[o];
        for (int i = 0; i < in; i++) s += x[t][i] * wt[o * in + i];
        y[t][o] = s;
      }
    return y;
  }
}
