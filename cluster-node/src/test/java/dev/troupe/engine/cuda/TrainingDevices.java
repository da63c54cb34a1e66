package dev.troupe.engine.cuda;

import dev.troupe.engine.ModelConfig;
import dev.troupe.training.TrainingBackend;
import dev.troupe.training.TrainingBackends;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The training backends the training tests run on: the CPU (ND4J), and the CUDA runner's training
 * mode on the CPU emulation of its kernels and on a real GPU, as {@link GpuBackends} selects them
 * (a missing compiler or GPU skips the test, saying so).
 */
public final class TrainingDevices {
  private TrainingDevices() {}

  /** "CPU", then the selected GPU backends ("EMULATED", "CUDA"). */
  public static List<String> names() {
    List<String> out = new ArrayList<>(List.of("CPU"));
    for (GpuBackends b : GpuBackends.selected()) out.add(b.name());
    return out;
  }

  /**
   * Random weights for {@code c} already rounded to BF16 (both devices multiply the same numbers).
   */
  public static Map<String, float[]> bf16Weights(ModelConfig c, long seed) {
    return CudaModelRunnerTest.bf16Weights(c, seed);
  }

  /** The GPU {@code name} ("EMULATED", "CUDA") opened for {@code c}; skips when unavailable. */
  public static Gpu open(String name, ModelConfig c) {
    return GpuBackends.valueOf(name).open(c, 16);
  }

  /** The factory of {@code name} (a {@link #names()} entry); skips the test when unavailable. */
  public static TrainingBackend.Factory factory(String name) {
    if (name.equals("CPU")) return TrainingBackends.cpu();
    GpuBackends b = GpuBackends.valueOf(name);
    // opening once here skips the test up front when the device is missing
    b.open(
            dev.troupe.engine.testing.TinyModels.config(
                dev.troupe.engine.testing.TinyModels.Arch.QWEN3),
            16)
        .close();
    return TrainingBackends.cuda(name.toLowerCase() + " GPU", cfg -> b.open(cfg, 16));
  }
}
