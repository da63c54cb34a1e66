package dev.troupe.training.nd4j;

import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.model.Projection;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;

/**
 * What training adapts: LoRA adapters of rank {@code rank} on the named projections of every layer
 * (served weight {@code W + (alpha / rank)·B·A}, B initialised to zero so step 0 equals the base),
 * or — for small models — every projection and norm of the transformer blocks in full.
 *
 * @param targets PEFT short names ({@link Projection#shortName()}): q_proj, k_proj, v_proj, o_proj,
 *     gate_proj, up_proj, down_proj
 * @param fullFineTune train the blocks' projection weights and norm gains themselves (no adapters)
 * @param seed seeds the Kaiming-uniform initialisation of A
 */
public record LoraSpec(
    int rank, double alpha, List<String> targets, boolean fullFineTune, long seed) {
  public static final List<String> ALL_TARGETS =
      Arrays.stream(Projection.values()).map(Projection::shortName).toList();

  /** ART's adapter: r 8, α 16, all seven projections, seed 3407. */
  public static final LoraSpec DEFAULT = new LoraSpec(8, 16, ALL_TARGETS, false, 3407);

  public LoraSpec {
    if (rank < 1) throw new IllegalArgumentException("rank must be >= 1");
    if (!(alpha > 0)) throw new IllegalArgumentException("alpha must be > 0");
    targets = List.copyOf(targets);
    if (!Set.copyOf(ALL_TARGETS).containsAll(targets))
      throw new IllegalArgumentException("unknown LoRA target in " + targets);
  }

  public double scale() {
    return alpha / rank;
  }

  /**
   * The adapters before any training, by parameter name ({@code <module>.lora_A} [rank, in], then
   * {@code <module>.lora_B} [out, rank]), layer by layer in {@link Projection} order: A drawn
   * Kaiming-uniform as PEFT does (bound 1/sqrt(in)) from {@code seed}, B zero. Every training
   * backend starts from these, so the CPU and the GPU train the same adapters. Empty under full
   * fine-tuning.
   */
  public Map<String, double[]> initialParameters(ModelConfig config) {
    Map<String, double[]> out = new LinkedHashMap<>();
    if (fullFineTune) return out;
    Random random = new Random(seed);
    for (int layer = 0; layer < config.numLayers(); layer++)
      for (Projection p : Projection.values()) {
        if (!targets.contains(p.shortName())) continue;
        int in = p.in(config), outDim = p.out(config);
        double bound = 1.0 / Math.sqrt(in);
        double[] a = new double[rank * in];
        for (int i = 0; i < a.length; i++) a[i] = (random.nextDouble() * 2 - 1) * bound;
        out.put(p.module(layer) + ".lora_A", a);
        out.put(p.module(layer) + ".lora_B", new double[outDim * rank]);
      }
    return out;
  }
}
