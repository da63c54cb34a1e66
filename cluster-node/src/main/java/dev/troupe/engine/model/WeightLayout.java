package dev.troupe.engine.model;

import dev.troupe.engine.ModelConfig;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The Hugging Face tensor names and shapes a {@link ModelConfig} needs (weights are {@code [out,
 * in]}), and the check that a {@link WeightSource} provides exactly those shapes.
 */
public final class WeightLayout {
  public static final String EMBED = "model.embed_tokens.weight";
  public static final String FINAL_NORM = "model.norm.weight";
  public static final String LM_HEAD = "lm_head.weight";

  private WeightLayout() {}

  /** Prefix of layer {@code i}'s tensors, e.g. {@code model.layers.3.}. */
  public static String layer(int i) {
    return "model.layers." + i + ".";
  }

  /** Every tensor the model reads, in load order, with its expected shape. */
  public static Map<String, long[]> expected(ModelConfig c) {
    Map<String, long[]> m = new LinkedHashMap<>();
    long h = c.hiddenSize(),
        q = (long) c.numHeads() * c.headDim(),
        kv = (long) c.numKvHeads() * c.headDim();
    m.put(EMBED, new long[] {c.vocabSize(), h});
    for (int i = 0; i < c.numLayers(); i++) {
      String p = layer(i);
      m.put(p + "input_layernorm.weight", new long[] {h});
      m.put(p + "self_attn.q_proj.weight", new long[] {q, h});
      m.put(p + "self_attn.k_proj.weight", new long[] {kv, h});
      m.put(p + "self_attn.v_proj.weight", new long[] {kv, h});
      if (c.attentionBias()) {
        m.put(p + "self_attn.q_proj.bias", new long[] {q});
        m.put(p + "self_attn.k_proj.bias", new long[] {kv});
        m.put(p + "self_attn.v_proj.bias", new long[] {kv});
      }
      if (c.qkNorm()) {
        m.put(p + "self_attn.q_norm.weight", new long[] {c.headDim()});
        m.put(p + "self_attn.k_norm.weight", new long[] {c.headDim()});
      }
      m.put(p + "self_attn.o_proj.weight", new long[] {h, q});
      m.put(p + "post_attention_layernorm.weight", new long[] {h});
      m.put(p + "mlp.gate_proj.weight", new long[] {c.intermediateSize(), h});
      m.put(p + "mlp.up_proj.weight", new long[] {c.intermediateSize(), h});
      m.put(p + "mlp.down_proj.weight", new long[] {h, c.intermediateSize()});
    }
    m.put(FINAL_NORM, new long[] {h});
    if (!c.tieWordEmbeddings()) m.put(LM_HEAD, new long[] {c.vocabSize(), h});
    return m;
  }

  /** Fails with the first missing or mis-shaped tensor, naming its file. */
  public static void check(ModelConfig c, WeightSource w) {
    for (Map.Entry<String, long[]> e : expected(c).entrySet()) {
      if (!w.contains(e.getKey()))
        throw new ModelLoadException(w.origin() + ": missing tensor " + e.getKey());
      WeightSource.TensorInfo t = w.info(e.getKey());
      if (!t.hasShape(e.getValue()))
        throw new ModelLoadException(
            t.origin()
                + ": tensor "
                + e.getKey()
                + " has shape "
                + t.shape()
                + ", expected "
                + Arrays.toString(e.getValue()));
    }
  }
}
