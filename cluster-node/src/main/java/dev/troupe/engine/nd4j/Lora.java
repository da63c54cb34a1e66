package dev.troupe.engine.nd4j;

import dev.troupe.engine.LoraAdapter;
import dev.troupe.engine.ModelConfig;
import java.util.Map;

/**
 * A registered LoRA adapter, checked against the model: per layer and module, {@code A [r, in]} and
 * {@code B [out, r]}; the runner adds {@code scale · B (A x)} to the base product for the rows of
 * chunks that run it, so the base weights stay shared by all adapters.
 */
final class Lora {
  static final int Q = 0, K = 1, V = 2, O = 3, GATE = 4, UP = 5, DOWN = 6;
  static final String[] MODULES = {
    "self_attn.q_proj",
    "self_attn.k_proj",
    "self_attn.v_proj",
    "self_attn.o_proj",
    "mlp.gate_proj",
    "mlp.up_proj",
    "mlp.down_proj"
  };
  private static final String PEFT_PREFIX = "base_model.model.";

  private final float scale;
  private final int rank;
  private final float[][] a; // [layer · 7 + module] → A [rank, in], null if not adapted
  private final float[][] b; // → B [out, rank]

  private Lora(float scale, int rank, float[][] a, float[][] b) {
    this.scale = scale;
    this.rank = rank;
    this.a = a;
    this.b = b;
  }

  static Lora of(LoraAdapter ad, ModelConfig c) {
    int n = c.numLayers() * MODULES.length;
    float[][] a = new float[n][], b = new float[n][];
    for (Map.Entry<String, float[]> e : ad.a().entrySet()) {
      String key =
          e.getKey().startsWith(PEFT_PREFIX)
              ? e.getKey().substring(PEFT_PREFIX.length())
              : e.getKey();
      int idx = index(key, c);
      int[] io = inOut(idx % MODULES.length, c);
      float[] am = e.getValue(), bm = ad.b().get(e.getKey());
      if (am.length != ad.rank() * io[0] || bm.length != io[1] * ad.rank())
        throw new IllegalArgumentException(
            "LoRA module "
                + e.getKey()
                + ": expected A ["
                + ad.rank()
                + ", "
                + io[0]
                + "] and B ["
                + io[1]
                + ", "
                + ad.rank()
                + "], got "
                + am.length
                + " and "
                + bm.length
                + " values");
      a[idx] = am.clone();
      b[idx] = bm.clone();
    }
    return new Lora((float) ad.scale(), ad.rank(), a, b);
  }

  private static int index(String key, ModelConfig c) {
    String prefix = "model.layers.";
    if (key.startsWith(prefix)) {
      int dot = key.indexOf('.', prefix.length());
      if (dot > 0) {
        try {
          int layer = Integer.parseInt(key.substring(prefix.length(), dot));
          String module = key.substring(dot + 1);
          for (int m = 0; m < MODULES.length; m++)
            if (MODULES[m].equals(module) && layer >= 0 && layer < c.numLayers())
              return layer * MODULES.length + m;
        } catch (NumberFormatException ignored) {
          // falls through to the error below
        }
      }
    }
    throw new IllegalArgumentException(
        "LoRA module " + key + " is not a linear layer of this model");
  }

  /** {in, out} of a module. */
  static int[] inOut(int module, ModelConfig c) {
    int h = c.hiddenSize(), q = c.numHeads() * c.headDim(), kv = c.numKvHeads() * c.headDim();
    int i = c.intermediateSize();
    return switch (module) {
      case Q -> new int[] {h, q};
      case K, V -> new int[] {h, kv};
      case O -> new int[] {q, h};
      case GATE, UP -> new int[] {h, i};
      default -> new int[] {i, h};
    };
  }

  /** {@code y[yo .. yo+out) += scale · B (A x[xo .. xo+in))} if this adapter covers the module. */
  void apply(int layer, int module, float[] x, int xo, int in, float[] y, int yo) {
    float[] am = a[layer * MODULES.length + module];
    if (am == null) return;
    float[] bm = b[layer * MODULES.length + module];
    float[] ax = new float[rank];
    for (int r = 0; r < rank; r++) ax[r] = Kernels.dot(am, r * in, x, xo, in) * scale;
    int out = bm.length / rank;
    for (int o = 0; o < out; o++) y[yo + o] += Kernels.dot(bm, o * rank, ax, 0, rank);
  }
}
