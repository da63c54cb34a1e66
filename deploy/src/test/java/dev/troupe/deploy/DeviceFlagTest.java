package dev.troupe.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import dev.troupe.engine.cuda.CudaProbe;
import dev.troupe.engine.cuda.EmulatedGpus;
import dev.troupe.engine.model.ModelLoadException;
import dev.troupe.engine.model.Quantization;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code --device}, {@code --gpu-memory-utilization}, {@code --dtype} and {@code --quantization},
 * and the no-GPU exit.
 */
class DeviceFlagTest {
  @TempDir Path tmp;

  @Test
  void flagsParseAndBadValuesNameTheFlag() {
    LaunchOptions o =
        LaunchOptions.parse(
            List.of(
                "serve",
                "--device",
                "cuda:1",
                "--gpu-memory-utilization",
                "0.5",
                "--dtype",
                "bfloat16"),
            null);
    assertEquals("cuda:1", o.device().device());
    assertEquals(1, o.device().cudaOrdinal());
    assertEquals(0.5, o.device().gpuMemoryUtilization());
    assertEquals("auto", LaunchOptions.parse(List.of(), null).device().device());
    for (List<String> bad :
        List.of(
            List.of("--device", "gpu"),
            List.of("--device", "cuda:-1"),
            List.of("--gpu-memory-utilization", "1.5"),
            List.of("--gpu-memory-utilization", "x"),
            List.of("--dtype", "int8"))) {
      IllegalArgumentException e =
          assertThrows(IllegalArgumentException.class, () -> LaunchOptions.parse(bad, null));
      assertTrue(e.getMessage().contains(bad.get(0)), e.getMessage());
    }
  }

  /**
   * {@code --quantization q8_0} reaches the config the node's workers read; anything but {@code
   * q8_0} or {@code none} is refused naming the flag; the GPU runner refuses it at load.
   */
  @Test
  void quantizationReachesTheWorkersConfig() {
    com.typesafe.config.Config defaults = com.typesafe.config.ConfigFactory.load();
    for (String q : List.of("none", "q8_0", "Q8_0")) {
      LaunchOptions o = LaunchOptions.parse(List.of("serve", "--quantization", q), null);
      com.typesafe.config.Config c = TroupeNode.config(o, o.apiKeys()).withFallback(defaults);
      assertEquals(
          q.equals("none") ? Quantization.NONE : Quantization.Q8_0,
          dev.troupe.engine.runner.DeviceSettings.fromConfig(c.getConfig("troupe.worker.device"))
              .quantization());
    }
    assertEquals(Quantization.NONE, LaunchOptions.parse(List.of(), null).device().quantization());
    for (String bad : List.of("awq", "fp8", "int8", "q4_0")) {
      IllegalArgumentException e =
          assertThrows(
              IllegalArgumentException.class,
              () -> LaunchOptions.parse(List.of("--quantization", bad), null));
      assertTrue(
          e.getMessage().startsWith("--quantization must be q8_0") && e.getMessage().endsWith(bad),
          e.getMessage());
    }
    var gpu =
        new dev.troupe.engine.runner.DeviceSettings(
                "cuda", 0.9, "auto", true, null, EmulatedGpus.class.getName())
            .withQuantization(Quantization.Q8_0);
    ModelLoadException e =
        assertThrows(
            ModelLoadException.class,
            () -> dev.troupe.engine.runner.ModelRunners.open(null, gpu, 16, 16, 256));
    assertTrue(
        e.getMessage().contains("--quantization q8_0 is not supported on the GPU"), e.getMessage());
  }

  /**
   * {@code --enforce-eager} turns the GPU runner's CUDA graphs off, in the config the node reads.
   */
  @Test
  void enforceEagerTurnsCudaGraphsOff() {
    com.typesafe.config.Config defaults = com.typesafe.config.ConfigFactory.load();
    for (boolean eager : new boolean[] {false, true}) {
      LaunchOptions o =
          LaunchOptions.parse(eager ? List.of("serve", "--enforce-eager") : List.of("serve"), null);
      assertEquals(!eager, o.device().cudaGraphs());
      com.typesafe.config.Config c = TroupeNode.config(o, o.apiKeys()).withFallback(defaults);
      assertEquals(
          !eager,
          dev.troupe.engine.runner.DeviceSettings.fromConfig(c.getConfig("troupe.worker.device"))
              .cudaGraphs());
    }
    assertTrue(defaults.getBoolean("troupe.worker.device.cuda-graphs"), "graphs on by default");
  }

  /**
   * On a machine without a usable GPU, {@code serve --device cuda} prints one line naming what is
   * missing and exits 2, with no stack trace; run in a child JVM whose classpath has no nd4j-native
   * (the GPU node's classpath).
   */
  @Test
  void deviceCudaWithoutAGpuExitsTwoWithOneLineAndNeedsNoNd4jNative() throws Exception {
    assumeFalse(CudaProbe.get().usable(), "this machine has a usable GPU");
    String cp =
        Arrays.stream(System.getProperty("java.class.path").split(File.pathSeparator))
            .filter(e -> !e.contains("nd4j-native"))
            .collect(Collectors.joining(File.pathSeparator));
    Process p =
        new ProcessBuilder(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp",
                cp,
                "dev.troupe.deploy.Main",
                "serve",
                "--device",
                "cuda",
                "--data-dir",
                tmp.toString())
            .redirectOutput(ProcessBuilder.Redirect.DISCARD)
            .start();
    String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8).trim();
    assertTrue(p.waitFor(120, TimeUnit.SECONDS));
    assertEquals(2, p.exitValue(), err);
    assertFalse(err.contains("\n"), "one line expected, got:\n" + err);
    assertFalse(err.contains("Exception"), err);
    assertTrue(err.startsWith("--device cuda: no usable GPU: "), err);
    assertTrue(err.contains("libcudart.so.13") || err.contains("driver"), err);
  }
}
