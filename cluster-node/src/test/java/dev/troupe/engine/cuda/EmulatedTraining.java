package dev.troupe.engine.cuda;

import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.model.WeightSource;
import dev.troupe.training.AdamW;
import dev.troupe.training.TrainingBackend;
import dev.troupe.training.TrainingBackends;
import dev.troupe.training.nd4j.LoraSpec;

/**
 * Training on the CPU emulation of the CUDA kernels, as a {@link TrainingBackend.Factory} with a
 * no-argument constructor: what {@code troupe.training.backend} names in tests that run a whole
 * node (deploy's RlLoopOverHttpTest).
 */
public final class EmulatedTraining implements TrainingBackend.Factory {
  private final TrainingBackend.Factory gpu =
      TrainingBackends.cuda(
          "emulated GPU (the CUDA kernels on the CPU)",
          cfg -> EmulatedGpu.start(KernelSource.generate(cfg, 16), 1L << 30));

  /** Skips the calling test, saying why, where no C++ compiler can build the emulator. */
  public static void assumeAvailable() {
    GpuBackends.skipUnless(
        EmulatedGpu.compiler() != null,
        "emulated-GPU training skipped: no C++ compiler (g++, or -Dtroupe.emu.cxx=...)");
  }

  @Override
  public TrainingBackend open(
      ModelConfig config, WeightSource weights, LoraSpec lora, AdamW.Hyper hyper, int maxLen) {
    return gpu.open(config, weights, lora, hyper, maxLen);
  }

  @Override
  public String describe() {
    return gpu.describe();
  }
}
