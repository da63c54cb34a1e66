package dev.troupe.engine;

import java.util.Map;

/**
 * A LoRA adapter in plain Java arrays: for each adapted linear layer {@code W [out, in]}, the
 * served weight is {@code W + (alpha / rank) · B · A}. Keys are the PEFT module names of the base
 * layer, e.g. {@code model.layers.0.self_attn.q_proj}; produced by training, consumed by the
 * runner.
 *
 * @param version the checkpoint step this adapter belongs to
 * @param a per module, {@code A [rank, in]} row-major
 * @param b per module, {@code B [out, rank]} row-major
 */
public record LoraAdapter(
    int version, int rank, double alpha, Map<String, float[]> a, Map<String, float[]> b) {

  public LoraAdapter {
    if (rank < 1) throw new IllegalArgumentException("rank must be >= 1");
    if (!a.keySet().equals(b.keySet()))
      throw new IllegalArgumentException("A and B must cover the same modules");
    a = Map.copyOf(a);
    b = Map.copyOf(b);
  }

  /** The LoRA scale {@code alpha / rank}. */
  public double scale() {
    return alpha / rank;
  }
}
