package dev.troupe.engine.model;

import dev.troupe.engine.ModelConfig;
import java.util.List;

/**
 * The built-in demo model: a tiny Qwen3 with Qwen3's vocabulary whose weights are drawn from a
 * fixed seed (normal, std 0.02; norm weights 1) when first read. No files, no downloads; its output
 * is random text until it is trained.
 */
public final class DemoModel {
  public static final long SEED = 20250611L;
  static final double STD = 0.02;

  private DemoModel() {}

  /** Qwen3 layout, vocabulary 151936, hidden 128, 2 layers, 4 heads / 2 KV heads of 32. */
  public static ModelConfig config() {
    return new ModelConfig(
        "Qwen3ForCausalLM",
        151936,
        128,
        384,
        2,
        4,
        2,
        32,
        4096,
        1e-6,
        1_000_000.0,
        null,
        true,
        false,
        true,
        null,
        List.of(151645, 151643),
        0);
  }

  /** The demo weights, generated deterministically per tensor. */
  public static WeightSource weights() {
    return new RandomWeights(config(), SEED, STD, "demo model");
  }
}
