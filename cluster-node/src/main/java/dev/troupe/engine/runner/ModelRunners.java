package dev.troupe.engine.runner;

import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.ModelRunner;
import dev.troupe.engine.cpu.CpuModelRunner;
import dev.troupe.engine.cuda.CudaModelRunner;
import dev.troupe.engine.cuda.CudaProbe;
import dev.troupe.engine.model.DemoModel;
import dev.troupe.engine.model.ModelConfigs;
import dev.troupe.engine.model.ModelLoadException;
import dev.troupe.engine.model.SafetensorsWeights;
import dev.troupe.engine.model.WeightSource;
import java.nio.file.Path;
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
    if (!choice.cuda()) {
      if (device.dtype().equals("bfloat16"))
        throw new ModelLoadException(
            "--dtype bfloat16 needs the GPU runner; the CPU runner computes in float32");
      return modelDir == null
          ? openDemo(numBlocks, blockSize)
          : open(modelDir, numBlocks, blockSize);
    }
    if (device.dtype().equals("float32"))
      throw new ModelLoadException(
          "--dtype float32 is not supported on the GPU; it computes in bfloat16 (--dtype auto)");
    ModelConfig config = modelDir == null ? DemoModel.config() : ModelConfigs.read(modelDir);
    try (WeightSource w =
        modelDir == null ? DemoModel.weights() : SafetensorsWeights.open(modelDir)) {
      CudaModelRunner r =
          CudaModelRunner.load(
              CudaProbe.open(choice.ordinal()),
              config,
              w,
              blockSize,
              0,
              device.gpuMemoryUtilization(),
              maxBatchTokens);
      log.info("{} runs on {}", modelDir == null ? "demo" : modelDir, r.device());
      return r;
    }
  }

  /**
   * Loads {@code config.json} and the safetensors weights of {@code modelDir} with a KV cache of
   * {@code numBlocks} blocks of {@code blockSize} positions.
   *
   * @throws ModelLoadException naming the file and tensor when the directory cannot be run
   */
  public static ModelRunner open(Path modelDir, int numBlocks, int blockSize) {
    ModelConfig config = ModelConfigs.read(modelDir);
    try (WeightSource w = SafetensorsWeights.open(modelDir)) {
      return CpuModelRunner.load(config, w, numBlocks, blockSize);
    }
  }

  /** The built-in demo model ({@link DemoModel}): random weights from a fixed seed. */
  public static ModelRunner openDemo(int numBlocks, int blockSize) {
    try (WeightSource w = DemoModel.weights()) {
      return CpuModelRunner.load(DemoModel.config(), w, numBlocks, blockSize);
    }
  }
}
