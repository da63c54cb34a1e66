package dev.troupe.engine.runner;

import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.ModelRunner;
import dev.troupe.engine.cpu.CpuModelRunner;
import dev.troupe.engine.cuda.CudaModelRunner;
import dev.troupe.engine.cuda.CudaProbe;
import dev.troupe.engine.cuda.GpuProvider;
import dev.troupe.engine.model.DType;
import dev.troupe.engine.model.DemoModel;
import dev.troupe.engine.model.LoadProgress;
import dev.troupe.engine.model.ModelConfigs;
import dev.troupe.engine.model.ModelLoadException;
import dev.troupe.engine.model.Quantization;
import dev.troupe.engine.model.SafetensorsWeights;
import dev.troupe.engine.model.ServedDType;
import dev.troupe.engine.model.WeightSource;
import java.nio.file.Path;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Opens model runners, from a Hugging Face model directory or the built-in demo model. The one
 * place that chooses a backend (the CPU runner or the CUDA runner, {@link Devices}), so the model
 * definition ({@code engine.model}) and each backend stay independent of each other.
 */
public final class ModelRunners {
  private static final Logger log = LoggerFactory.getLogger(ModelRunners.class);

  private ModelRunners() {}

  /**
   * Opens {@code modelDir} (null = the demo model) on the device {@code device} asks for: the CUDA
   * runner (BF16, KV cache sized by {@code --gpu-memory-utilization}) or the CPU runner ({@code
   * numBlocks} KV blocks).
   *
   * @param maxBatchTokens the step's token budget (the GPU runner's work buffers are sized for it)
   * @throws Devices.NoDeviceException when CUDA is asked for and cannot be had
   */
  public static ModelRunner open(
      Path modelDir, DeviceSettings device, int numBlocks, int blockSize, int maxBatchTokens) {
    Devices.Choice choice = Devices.choose(device);
    if (!choice.cuda())
      return modelDir == null
          ? openDemo(device.dtype(), device.quantization(), numBlocks, blockSize)
          : open(modelDir, device.dtype(), device.quantization(), numBlocks, blockSize);
    if (device.quantization() != Quantization.NONE)
      throw new ModelLoadException(
          "--quantization "
              + device.quantization().flag()
              + " is not supported on the GPU (the CPU runner's 8-bit weights; --device cpu)");
    if (!List.of("auto", "bfloat16").contains(device.dtype()))
      throw new ModelLoadException(
          "--dtype "
              + device.dtype()
              + " is not supported on the GPU; it computes in bfloat16 (--dtype auto or bfloat16)");
    ModelConfig config = modelDir == null ? DemoModel.config() : ModelConfigs.read(modelDir);
    try (WeightSource w = modelDir == null ? DemoModel.weights() : weights(modelDir)) {
      CudaModelRunner r =
          CudaModelRunner.load(
              device.gpuProvider().isEmpty()
                  ? CudaProbe.open(choice.ordinal())
                  : GpuProvider.named(device.gpuProvider()).open(config, blockSize),
              config,
              w,
              blockSize,
              0,
              device.gpuMemoryUtilization(),
              maxBatchTokens,
              device.cudaGraphs(),
              device.training() == null ? 0 : device.training().bytes(config));
      if (w instanceof LoadProgress p) p.done();
      log.info("{} runs on {}", modelDir == null ? "demo" : modelDir, r.device());
      return r;
    }
  }

  /**
   * Loads {@code config.json} and the safetensors weights of {@code modelDir} on the CPU runner,
   * served in {@code dtype} ({@link ServedDType}: vLLM's {@code --dtype}), with a KV cache of
   * {@code numBlocks} blocks of {@code blockSize} positions.
   *
   * @throws ModelLoadException naming the file and tensor when the directory cannot be run
   */
  public static ModelRunner open(Path modelDir, String dtype, int numBlocks, int blockSize) {
    return open(modelDir, dtype, Quantization.NONE, numBlocks, blockSize);
  }

  /**
   * {@link #open(Path, String, int, int)} with the matrices kept {@code quantization}'s way (vLLM's
   * {@code --quantization}).
   */
  public static ModelRunner open(
      Path modelDir, String dtype, Quantization quantization, int numBlocks, int blockSize) {
    ModelConfig config = ModelConfigs.read(modelDir);
    try (LoadProgress w = weights(modelDir)) {
      DType served = ServedDType.resolve(dtype, ModelConfigs.torchDType(modelDir), w);
      ModelRunner runner =
          CpuModelRunner.load(config, w, served, quantization, numBlocks, blockSize);
      w.done();
      return runner;
    }
  }

  /** Every how long a load in progress says how far it has got. */
  private static final long PROGRESS_INTERVAL_NANOS = 5_000_000_000L;

  /** The directory's weights, reporting their reading at INFO (vLLM's loading bar). */
  private static LoadProgress weights(Path modelDir) {
    return new LoadProgress(
        SafetensorsWeights.open(modelDir),
        "model " + modelDir.getFileName(),
        log::info,
        System::nanoTime,
        PROGRESS_INTERVAL_NANOS);
  }

  /** {@link #open(Path, String, int, int)} with {@code dtype} auto. */
  public static ModelRunner open(Path modelDir, int numBlocks, int blockSize) {
    return open(modelDir, "auto", numBlocks, blockSize);
  }

  /** The built-in demo model ({@link DemoModel}) on the CPU runner in {@code dtype}. */
  public static ModelRunner openDemo(String dtype, int numBlocks, int blockSize) {
    return openDemo(dtype, Quantization.NONE, numBlocks, blockSize);
  }

  /**
   * The built-in demo model on the CPU runner in {@code dtype}, kept {@code quantization}'s way.
   */
  public static ModelRunner openDemo(
      String dtype, Quantization quantization, int numBlocks, int blockSize) {
    try (WeightSource w = DemoModel.weights()) {
      return CpuModelRunner.load(
          DemoModel.config(),
          w,
          ServedDType.resolve(dtype, null, w),
          quantization,
          numBlocks,
          blockSize);
    }
  }

  /** The built-in demo model ({@link DemoModel}), dtype auto (BF16). */
  public static ModelRunner openDemo(int numBlocks, int blockSize) {
    return openDemo("auto", numBlocks, blockSize);
  }
}
