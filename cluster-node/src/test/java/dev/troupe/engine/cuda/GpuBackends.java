package dev.troupe.engine.cuda;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.troupe.engine.ModelConfig;
import java.util.HashSet;
import java.util.Set;

/**
 * The devices the CUDA runner's tests run on: the real GPU where one is usable, and the CPU
 * emulation of the same kernel source where a C++ compiler is. A missing one skips the test with
 * the reason printed (once per reason) and kept in the JUnit report.
 */
enum GpuBackends {
  EMULATED,
  CUDA;

  private static final Set<String> printed = new HashSet<>();

  /** Opens this backend for {@code cfg} (kernels generated for it) or skips the test. */
  Gpu open(ModelConfig cfg, int blockSize) {
    if (this == CUDA) {
      CudaProbe.Result r = CudaProbe.get();
      skipUnless(r.usable(), "CUDA runner tests on a real GPU skipped: " + r.summary());
      return CudaProbe.open(r.usableDevices().get(0).ordinal());
    }
    skipUnless(
        EmulatedGpu.compiler() != null,
        "emulated-GPU tests skipped: no C++ compiler (g++, or -Dtroupe.emu.cxx=...) on this machine");
    return EmulatedGpu.start(KernelSource.generate(cfg, blockSize), 1L << 30);
  }

  static void skipUnless(boolean ok, String reason) {
    if (!ok) {
      synchronized (printed) {
        if (printed.add(reason)) System.out.println("[SKIPPED] " + reason);
      }
    }
    assumeTrue(ok, reason);
  }
}
