package dev.troupe.engine.cuda;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.troupe.engine.ModelConfig;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * The devices the CUDA runner's tests run on: the real GPU where one is usable, and the CPU
 * emulation of the same kernel source where a C++ compiler is. A missing one skips the test with
 * the reason printed (once per reason) and kept in the JUnit report. {@code
 * -Dtroupe.gpu.backends=CUDA} (bench/gpu/run.sh on the GPU machine) leaves the emulated variants
 * out altogether, so that any skipped or aborted test there is a failure to report; CI runs them.
 */
enum GpuBackends {
  EMULATED,
  CUDA;

  /** The backends to test ({@code troupe.gpu.backends}, comma-separated; default all). */
  static List<GpuBackends> selected() {
    String s = System.getProperty("troupe.gpu.backends", "");
    if (s.isBlank()) return List.of(values());
    List<GpuBackends> out = new ArrayList<>();
    for (String name : s.split(",")) out.add(valueOf(name.trim().toUpperCase(Locale.ROOT)));
    return out;
  }

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
