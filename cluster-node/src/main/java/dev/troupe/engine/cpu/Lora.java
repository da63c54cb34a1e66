package dev.troupe.engine.cpu;

import dev.troupe.engine.LoraAdapter;
import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.model.Projection;
import java.util.Map;

/**
 * A registered LoRA adapter, checked against the model: per layer and {@link Projection}, {@code A
 * [r, in]} and {@code B [out, r]}; the runner adds {@code scale · B (A x)} to the base product for
 * the rows of chunks that run it, so the base weights stay shared by all adapters.
 */
final class Lora {
  private static final String PEFT_PREFIX = "base_model.model.";
  private static final int P = Projection.values().length;

  private final float scale;
  private final int rank;
  private final float[][] a; // [layer · P + projection] → A [rank, in], null if not adapted
  private final float[][] b; // → B [out, rank]

  private Lora(float scale, int rank, float[][] a, float[][] b) {
    this.scale = scale;
    this.rank = rank;
    this.a = a;
    this.b = b;
  }

  static Lora of(LoraAdapter ad, ModelConfig c) {
    float[][] a = new float[c.numLayers() * P][], b = new float[c.numLayers() * P][];
    for (Map.Entry<String, float[]> e : ad.a().entrySet()) {
      String key =
          e.getKey().startsWith(PEFT_PREFIX)
              ? e.getKey().substring(PEFT_PREFIX.length())
              : e.getKey();
      int idx = index(key, c);
      Projection p = Projection.values()[idx % P];
      int in = p.in(c), out = p.out(c);
      float[] am = e.getValue(), bm = ad.b().get(e.getKey());
      if (am.length != ad.rank() * in || bm.length != out * ad.rank())
        throw new IllegalArgumentException(
            "LoRA module "
                + e.getKey()
                + ": expected A ["
                + ad.rank()
                + ", "
                + in
                + "] and B ["
                + out
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

  /** {@code layer · P + projection} of a module name such as {@code model.layers.3.mlp.up_proj}. */
  private static int index(String key, ModelConfig c) {
    for (int layer = 0; layer < c.numLayers(); layer++)
      for (Projection p : Projection.values())
        if (p.module(layer).equals(key)) return layer * P + p.ordinal();
    throw new IllegalArgumentException(
        "LoRA module " + key + " is not a linear layer of this model");
  }

  /** Whether this adapter adapts projection {@code p} of layer {@code layer}. */
  boolean covers(int layer, Projection p) {
    return a[layer * P + p.ordinal()] != null;
  }

  /** {@code scale · A x} for the natural row {@code x[xo .. xo+in)}, {@code [rank]}. */
  float[] project(int layer, Projection p, float[] x, int xo, int in) {
    float[] am = a[layer * P + p.ordinal()];
    float[] ax = new float[rank];
    for (int r = 0; r < rank; r++) ax[r] = Kernels.dot(am, r * in, x, xo, in) * scale;
    return ax;
  }

  /** Row {@code j} of {@code B · ax}: what the adapter adds to output {@code j} of the module. */
  float delta(int layer, Projection p, int j, float[] ax) {
    return Kernels.dot(b[layer * P + p.ordinal()], j * rank, ax, 0, rank);
  }
}
