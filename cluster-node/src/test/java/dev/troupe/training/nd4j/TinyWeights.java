package dev.troupe.training.nd4j;

import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.model.WeightSource;
import dev.troupe.engine.testing.MapWeights;
import java.util.HashMap;
import java.util.Map;
import java.util.Random;

/** Random Hugging Face-named weights for a tiny config, for tests. */
final class TinyWeights {
  final Map<String, float[]> tensors = new HashMap<>();

  TinyWeights(ModelConfig c, long seed) {
    Random r = new Random(seed);
    int h = c.hiddenSize();
    int d = c.headDim();
    put("model.embed_tokens.weight", c.vocabSize() * h, 1.0, r, false);
    if (!c.tieWordEmbeddings()) put("lm_head.weight", c.vocabSize() * h, 0.5, r, false);
    put("model.norm.weight", h, 0.2, r, true);
    for (int i = 0; i < c.numLayers(); i++) {
      String p = "model.layers." + i + ".";
      int q = c.numHeads() * d;
      int kv = c.numKvHeads() * d;
      double s = 1 / Math.sqrt(h);
      put(p + "self_attn.q_proj.weight", q * h, 2 * s, r, false);
      put(p + "self_attn.k_proj.weight", kv * h, 2 * s, r, false);
      put(p + "self_attn.v_proj.weight", kv * h, s, r, false);
      put(p + "self_attn.o_proj.weight", h * q, s, r, false);
      if (c.attentionBias()) {
        put(p + "self_attn.q_proj.bias", q, 0.1, r, false);
        put(p + "self_attn.k_proj.bias", kv, 0.1, r, false);
        put(p + "self_attn.v_proj.bias", kv, 0.1, r, false);
      }
      if (c.qkNorm()) {
        put(p + "self_attn.q_norm.weight", d, 0.2, r, true);
        put(p + "self_attn.k_norm.weight", d, 0.2, r, true);
      }
      put(p + "mlp.gate_proj.weight", c.intermediateSize() * h, s, r, false);
      put(p + "mlp.up_proj.weight", c.intermediateSize() * h, s, r, false);
      put(
          p + "mlp.down_proj.weight",
          h * c.intermediateSize(),
          1 / Math.sqrt(c.intermediateSize()),
          r,
          false);
      put(p + "input_layernorm.weight", h, 0.2, r, true);
      put(p + "post_attention_layernorm.weight", h, 0.2, r, true);
    }
  }

  private void put(String name, int n, double scale, Random r, boolean aroundOne) {
    float[] v = new float[n];
    for (int i = 0; i < n; i++) v[i] = (float) ((aroundOne ? 1 : 0) + scale * r.nextGaussian());
    tensors.put(name, v);
  }

  /** The tensors as a weight source shaped by {@code c}. */
  WeightSource source(ModelConfig c) {
    return new MapWeights(c, tensors);
  }

  static ModelConfig llama(boolean tied) {
    return new ModelConfig(
        "LlamaForCausalLM",
        23,
        16,
        24,
        2,
        4,
        2,
        4,
        128,
        1e-5,
        10000.0,
        new ModelConfig.RopeScaling("llama3", 8.0, 1.0, 4.0, 16),
        tied,
        false,
        false,
        1,
        null,
        0);
  }

  static ModelConfig qwen2() {
    return new ModelConfig(
        "Qwen2ForCausalLM",
        19,
        12,
        20,
        2,
        3,
        1,
        4,
        128,
        1e-6,
        1000000.0,
        null,
        false,
        true,
        false,
        null,
        null,
        0);
  }

  static ModelConfig qwen3() {
    return new ModelConfig(
        "Qwen3ForCausalLM",
        21,
        16,
        20,
        2,
        4,
        2,
        6,
        128,
        1e-6,
        1000000.0,
        null,
        true,
        false,
        true,
        null,
        null,
        0);
  }
}
