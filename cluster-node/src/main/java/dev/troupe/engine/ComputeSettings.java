package dev.troupe.engine;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import java.nio.file.Path;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How this JVM computes, from {@code troupe.worker.compute} (cluster-node's {@code
 * reference.conf}): the CPU runner's thread team and kernels, the start-up warm-up, the CUDA kernel
 * cache. These are per JVM — one team, one kernel layout, one cache — so they are read once: the
 * node installs its own ({@link #install}) before any model loads; code that runs without a node
 * (tests, benches) gets the JVM's config on first use, where {@code -Dtroupe.worker.compute.…}
 * overrides a key.
 *
 * @param cpuThreads members of the CPU runner's team; 0 = one per available core
 * @param cpuSpin how long a waiting team member spins before parking
 * @param kernelMaxRows products of up to this many rows run on the Vector API kernels, larger ones
 *     on OpenBLAS
 * @param vectorKernels whether the Vector API kernels may run at all
 * @param bf16Gemm whether BF16 models' prompt rows may run on oneDNN's matmul (where the CPU has
 *     BF16 dot products; generated rows stay on the FP32 path); off = every row on the FP32 path
 * @param bf16GemmResident bytes of BF16 weights oneDNN may keep in native memory (beside the heap's
 *     copy) instead of copying them at every product; 0 = none
 * @param bf16GemmDecodeRows with oneDNN: generated rows share its arithmetic (activations rounded
 *     to BF16, the kernels adding as {@code vdpbf16ps} does) and a step with at least this many of
 *     them runs them on oneDNN; 0 = generated rows on the FP32 path, unrounded
 * @param warmup each replica's start-up warm-up budget; zero = none
 * @param cudaKernelCache where compiled CUDA kernels are kept; null = {@code ~/.cache/troupe/cuda}
 */
public record ComputeSettings(
    int cpuThreads,
    Duration cpuSpin,
    int kernelMaxRows,
    boolean vectorKernels,
    boolean bf16Gemm,
    long bf16GemmResident,
    int bf16GemmDecodeRows,
    Duration warmup,
    Path cudaKernelCache) {
  private static final Logger log = LoggerFactory.getLogger(ComputeSettings.class);

  private static ComputeSettings jvm;

  public ComputeSettings {
    if (cpuThreads < 0) throw new IllegalArgumentException("cpu-threads must be >= 0");
    if (kernelMaxRows < 0) throw new IllegalArgumentException("kernel-max-rows must be >= 0");
    if (bf16GemmResident < 0) throw new IllegalArgumentException("bf16-gemm-resident must be >= 0");
    if (bf16GemmDecodeRows < 0)
      throw new IllegalArgumentException("bf16-gemm-decode-rows must be >= 0");
  }

  /** Reads a {@code troupe.worker.compute} section. */
  public static ComputeSettings fromConfig(Config c) {
    String cache = c.getString("cuda-kernel-cache").trim();
    return new ComputeSettings(
        c.getInt("cpu-threads"),
        c.getDuration("cpu-spin"),
        c.getInt("kernel-max-rows"),
        c.getBoolean("vector-kernels"),
        c.getBoolean("bf16-gemm"),
        c.getBytes("bf16-gemm-resident"),
        c.getInt("bf16-gemm-decode-rows"),
        c.getDuration("warmup"),
        cache.isEmpty() ? null : Path.of(cache));
  }

  /**
   * Makes {@code settings} this JVM's, unless the engine has read them already: then the first stay
   * (a node started after another in the same JVM shares its team) and this is logged.
   */
  public static synchronized void install(ComputeSettings settings) {
    if (jvm == null) jvm = settings;
    else if (!jvm.equals(settings))
      log.warn("compute settings {} already in use in this JVM; {} ignored", jvm, settings);
  }

  /** This JVM's settings (read from its config the first time when none were installed). */
  public static synchronized ComputeSettings jvm() {
    if (jvm == null) jvm = fromConfig(ConfigFactory.load().getConfig("troupe.worker.compute"));
    return jvm;
  }

  /** The team's size: {@link #cpuThreads}, or one member per available core. */
  public int teamSize() {
    return cpuThreads > 0 ? cpuThreads : Runtime.getRuntime().availableProcessors();
  }

  /** {@link #cudaKernelCache}, or {@code ~/.cache/troupe/cuda}. */
  public Path kernelCache() {
    return cudaKernelCache != null
        ? cudaKernelCache
        : Path.of(System.getProperty("user.home"), ".cache", "troupe", "cuda");
  }
}
