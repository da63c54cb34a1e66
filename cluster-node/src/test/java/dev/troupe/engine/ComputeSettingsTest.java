package dev.troupe.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The JVM's compute switches come from {@code troupe.worker.compute}, not ad hoc properties. */
class ComputeSettingsTest {
  @Test
  void referenceConfHoldsTheDefaults() {
    ComputeSettings s =
        ComputeSettings.fromConfig(
            // the reference.conf files alone: defaultReference() lets -D properties win
            ConfigFactory.parseResources("reference.conf")
                .resolve()
                .getConfig("troupe.worker.compute"));
    assertEquals(0, s.cpuThreads());
    assertEquals(Runtime.getRuntime().availableProcessors(), s.teamSize());
    assertEquals(Duration.ofNanos(20_000), s.cpuSpin());
    assertEquals(64, s.kernelMaxRows());
    assertTrue(s.vectorKernels());
    assertTrue(s.bf16Gemm());
    assertEquals(Duration.ofSeconds(5), s.warmup());
    assertNull(s.cudaKernelCache());
    assertTrue(s.kernelCache().endsWith(Path.of(".cache", "troupe", "cuda")));
  }

  @Test
  void aKeySetElsewhereWins() {
    ComputeSettings s =
        ComputeSettings.fromConfig(
            ConfigFactory.parseString(
                    "troupe.worker.compute { cpu-threads = 3, warmup = 0s, bf16-gemm = off, "
                        + "cuda-kernel-cache = \"/tmp/k\" }")
                .withFallback(ConfigFactory.defaultReference())
                .getConfig("troupe.worker.compute"));
    assertEquals(3, s.teamSize());
    assertEquals(Duration.ZERO, s.warmup());
    assertFalse(s.bf16Gemm());
    assertEquals(Path.of("/tmp/k"), s.kernelCache());
  }
}
