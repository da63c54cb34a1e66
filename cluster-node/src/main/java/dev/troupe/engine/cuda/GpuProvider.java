package dev.troupe.engine.cuda;

import dev.troupe.engine.ModelConfig;

/**
 * Opens the GPU a replica's CUDA runner runs on, in place of the machine's ({@link CudaProbe}):
 * {@code troupe.worker.device.gpu-provider} names an implementation with a public no-argument
 * constructor. Tests serve whole nodes on the CPU emulation of the kernels this way.
 */
public interface GpuProvider {
  /** A fresh device with the kernels of {@code cfg} and KV blocks of {@code blockSize} loadable. */
  Gpu open(ModelConfig cfg, int blockSize);

  /** Instantiates the provider class {@code name}. */
  static GpuProvider named(String name) {
    try {
      return Class.forName(name).asSubclass(GpuProvider.class).getConstructor().newInstance();
    } catch (ReflectiveOperationException | ClassCastException e) {
      throw new IllegalArgumentException(
          "troupe.worker.device.gpu-provider = "
              + name
              + ": not a GpuProvider with a public no-argument constructor ("
              + e
              + ")",
          e);
    }
  }
}
