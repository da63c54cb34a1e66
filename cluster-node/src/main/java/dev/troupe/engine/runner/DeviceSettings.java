package dev.troupe.engine.runner;

import com.typesafe.config.Config;
import dev.troupe.engine.model.Quantization;
import dev.troupe.engine.model.ServedDType;
import java.util.List;
import java.util.Locale;

/**
 * Where a node's model replicas run ({@code troupe.worker.device}, flags {@code --device}, {@code
 * --gpu-memory-utilization}, {@code --dtype}, {@code --enforce-eager}, {@code --quantization}).
 *
 * @param device {@code auto} (CUDA when a usable GPU and the CUDA 13 libraries are found, else the
 *     CPU), {@code cpu}, {@code cuda} (any GPU; replicas spread over the node's GPUs) or {@code
 *     cuda:N}
 * @param gpuMemoryUtilization share of each GPU's memory a replica may take (weights, work buffers
 *     and the KV cache, which gets the rest), as vLLM's {@code --gpu-memory-utilization}; the CPU
 *     runner's cache is {@code troupe.worker.engine.num-blocks}
 * @param dtype as vLLM's {@code --dtype} ({@link ServedDType}): {@code auto}, {@code bfloat16},
 *     {@code half}/{@code float16}, {@code float}/{@code float32}; the GPU runner takes {@code
 *     auto} and {@code bfloat16} only (it computes in BF16)
 * @param cudaGraphs whether the GPU runner replays decode-only steps from CUDA graphs ({@code
 *     cuda-graphs}; false with {@code --enforce-eager}, as vLLM's); the CPU runner has none
 * @param training a trainer that will share each GPU replica's runner (its memory is kept out of
 *     the KV cache), null for none
 * @param gpuProvider a {@link dev.troupe.engine.cuda.GpuProvider} class that opens the GPUs in
 *     place of the machine's ({@code troupe.worker.device.gpu-provider}; tests: the CPU emulation),
 *     empty for the machine's
 * @param quantization as vLLM's {@code --quantization}: {@code none} or {@code q8_0} ({@link
 *     Quantization}; the CPU runner only)
 */
public record DeviceSettings(
    String device,
    double gpuMemoryUtilization,
    String dtype,
    boolean cudaGraphs,
    SharedTraining training,
    String gpuProvider,
    Quantization quantization) {
  public static final List<String> DTYPES = ServedDType.NAMES;

  public DeviceSettings {
    quantization = quantization == null ? Quantization.NONE : quantization;
    gpuProvider = gpuProvider == null ? "" : gpuProvider.trim();
    device = device.trim().toLowerCase(Locale.ROOT);
    dtype = dtype.trim().toLowerCase(Locale.ROOT);
    ordinal(device); // validates
    if (!(gpuMemoryUtilization > 0 && gpuMemoryUtilization <= 1))
      throw new IllegalArgumentException(
          "--gpu-memory-utilization must be in (0, 1], got " + gpuMemoryUtilization);
    if (!DTYPES.contains(dtype))
      throw new IllegalArgumentException(
          "--dtype must be one of " + String.join(", ", DTYPES) + ", got " + dtype);
  }

  /** With CUDA graphs on (the default). */
  public DeviceSettings(String device, double gpuMemoryUtilization, String dtype) {
    this(device, gpuMemoryUtilization, dtype, true);
  }

  /** No trainer on the GPU replicas, the machine's GPUs. */
  public DeviceSettings(
      String device, double gpuMemoryUtilization, String dtype, boolean cudaGraphs) {
    this(device, gpuMemoryUtilization, dtype, cudaGraphs, null, "", Quantization.NONE);
  }

  /** No quantization. */
  public DeviceSettings(
      String device,
      double gpuMemoryUtilization,
      String dtype,
      boolean cudaGraphs,
      SharedTraining training,
      String gpuProvider) {
    this(device, gpuMemoryUtilization, dtype, cudaGraphs, training, gpuProvider, Quantization.NONE);
  }

  /** CPU only, dtype auto: what tests and the demo default to. */
  public static final DeviceSettings CPU = new DeviceSettings("cpu", 0.9, "auto");

  public static DeviceSettings fromConfig(Config c) {
    return new DeviceSettings(
        c.getString("device"),
        c.getDouble("gpu-memory-utilization"),
        c.getString("dtype"),
        c.getBoolean("cuda-graphs"),
        null,
        c.hasPath("gpu-provider") ? c.getString("gpu-provider") : "",
        Quantization.parse(c.hasPath("quantization") ? c.getString("quantization") : ""));
  }

  /** These settings, with GPU replicas keeping {@code t}'s memory for a trainer (null: none). */
  public DeviceSettings withTraining(SharedTraining t) {
    return new DeviceSettings(
        device, gpuMemoryUtilization, dtype, cudaGraphs, t, gpuProvider, quantization);
  }

  /** These settings with the weights kept {@code q}'s way. */
  public DeviceSettings withQuantization(Quantization q) {
    return new DeviceSettings(
        device, gpuMemoryUtilization, dtype, cudaGraphs, training, gpuProvider, q);
  }

  public boolean isAuto() {
    return device.equals("auto");
  }

  public boolean isCpu() {
    return device.equals("cpu");
  }

  /** -1 for {@code cuda} (any GPU), N for {@code cuda:N}, -2 for cpu/auto. */
  public int cudaOrdinal() {
    return ordinal(device);
  }

  private static int ordinal(String d) {
    if (d.equals("cpu") || d.equals("auto")) return -2;
    if (d.equals("cuda")) return -1;
    if (d.startsWith("cuda:")) {
      try {
        int n = Integer.parseInt(d.substring(5));
        if (n >= 0) return n;
      } catch (NumberFormatException ignored) {
        // falls through
      }
    }
    throw new IllegalArgumentException(
        "--device must be auto, cpu, cuda or cuda:N (N = 0, 1, ...), got " + d);
  }
}
