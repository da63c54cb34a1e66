package dev.troupe.engine.model;

import dev.troupe.engine.ModelConfig;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The model definition every backend shares (the CPU runner, the trainer, a GPU runner): which
 * tensors a {@link ModelConfig} has, by Hugging Face name, with their shapes (weights {@code [out,
 * in]} row-major), and which {@link LayerStep}s each decoder layer runs. Rotary tables are {@link
 * RopeTables}; tensors are read, in their stored dtype or converted, through a {@link
 * WeightSource}.
 *
 * <pre>{@code
 * TransformerLayout layout = TransformerLayout.of(config);
 * layout.check(weights);                                   // names and shapes, before any read
 * String wq = layout.layer(3).weight(Projection.Q);         // model.layers.3.self_attn.q_proj.weight
 * weights.copyTo(wq, 0, n, shortBuffer, DType.BF16);        // 16-bit stays 16-bit
 * }</pre>
 */
public final class TransformerLayout {
  public static final String EMBED = "model.embed_tokens.weight";
  public static final String FINAL_NORM = "model.norm.weight";
  public static final String LM_HEAD = "lm_head.weight";

  private final ModelConfig config;
  private final List<LayerTensors> layers;
  private final Map<String, long[]> shapes;
  private final List<LayerStep> steps;

  private TransformerLayout(ModelConfig c) {
    this.config = c;
    List<LayerTensors> ls = new ArrayList<>();
    Map<String, long[]> m = new LinkedHashMap<>();
    long h = c.hiddenSize();
    m.put(EMBED, new long[] {c.vocabSize(), h});
    for (int i = 0; i < c.numLayers(); i++) {
      LayerTensors l = new LayerTensors(i, c.attentionBias(), c.qkNorm());
      ls.add(l);
      m.put(l.inputNorm(), new long[] {h});
      for (Projection p : List.of(Projection.Q, Projection.K, Projection.V)) {
        m.put(l.weight(p), new long[] {p.out(c), p.in(c)});
        if (l.bias(p) != null) m.put(l.bias(p), new long[] {p.out(c)});
      }
      if (c.qkNorm()) {
        m.put(l.qNorm(), new long[] {c.headDim()});
        m.put(l.kNorm(), new long[] {c.headDim()});
      }
      m.put(l.weight(Projection.O), new long[] {h, Projection.O.in(c)});
      m.put(l.postNorm(), new long[] {h});
      for (Projection p : List.of(Projection.GATE, Projection.UP, Projection.DOWN))
        m.put(l.weight(p), new long[] {p.out(c), p.in(c)});
    }
    m.put(FINAL_NORM, new long[] {h});
    if (!c.tieWordEmbeddings()) m.put(LM_HEAD, new long[] {c.vocabSize(), h});
    this.layers = List.copyOf(ls);
    this.shapes = Collections.unmodifiableMap(m);
    List<LayerStep> s = new ArrayList<>(List.of(LayerStep.values()));
    if (!c.attentionBias()) s.remove(LayerStep.QKV_BIAS);
    if (!c.qkNorm()) s.remove(LayerStep.QK_NORM);
    this.steps = List.copyOf(s);
  }

  public static TransformerLayout of(ModelConfig c) {
    return new TransformerLayout(c);
  }

  public ModelConfig config() {
    return config;
  }

  /** Prefix of layer {@code i}'s tensors, e.g. {@code model.layers.3.}. */
  public static String layerPrefix(int i) {
    return "model.layers." + i + ".";
  }

  /** The tensors of decoder layer {@code i}. */
  public LayerTensors layer(int i) {
    return layers.get(i);
  }

  public List<LayerTensors> layers() {
    return layers;
  }

  /** The LM head's weight {@code [vocab, hidden]}: the embedding when tied. */
  public String lmHead() {
    return config.tieWordEmbeddings() ? EMBED : LM_HEAD;
  }

  /** Every tensor the model reads, in load order, with its shape (read-only). */
  public Map<String, long[]> tensors() {
    return shapes;
  }

  /** The shape of tensor {@code name}; an {@link IllegalArgumentException} if it is not ours. */
  public long[] shape(String name) {
    long[] s = shapes.get(name);
    if (s == null) throw new IllegalArgumentException("no tensor " + name + " in this layout");
    return s.clone();
  }

  /** The steps each decoder layer runs for this config, in order. */
  public List<LayerStep> steps() {
    return steps;
  }

  /** The matrices products read per forward: every layer's projections and the LM head. */
  public List<String> productWeights() {
    List<String> out = new ArrayList<>();
    for (LayerTensors l : layers) for (Projection p : Projection.values()) out.add(l.weight(p));
    out.add(lmHead());
    return out;
  }

  /** Fails with the first missing or mis-shaped tensor, naming its file. */
  public void check(WeightSource w) {
    for (Map.Entry<String, long[]> e : shapes.entrySet()) {
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

  /**
   * The tensor names of one decoder layer.
   *
   * @param hasBias q/k/v carry biases (Qwen2)
   * @param hasQkNorm per-head q/k RMSNorm gains exist (Qwen3)
   */
  public record LayerTensors(int index, boolean hasBias, boolean hasQkNorm) {

    public String prefix() {
      return layerPrefix(index);
    }

    public String inputNorm() {
      return prefix() + "input_layernorm.weight";
    }

    public String postNorm() {
      return prefix() + "post_attention_layernorm.weight";
    }

    /** {@code [head_dim]}, or null when the model has no q/k norm. */
    public String qNorm() {
      return hasQkNorm ? prefix() + "self_attn.q_norm.weight" : null;
    }

    /** {@code [head_dim]}, or null when the model has no q/k norm. */
    public String kNorm() {
      return hasQkNorm ? prefix() + "self_attn.k_norm.weight" : null;
    }

    /** The weight {@code [out, in]} of projection {@code p}. */
    public String weight(Projection p) {
      return p.module(index) + ".weight";
    }

    /** The bias {@code [out]} of {@code p}, or null (only q/k/v of Qwen2 have one). */
    public String bias(Projection p) {
      return hasBias && (p == Projection.Q || p == Projection.K || p == Projection.V)
          ? p.module(index) + ".bias"
          : null;
    }
  }
}
