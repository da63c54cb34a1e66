package dev.troupe.engine.runner;

import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.ModelRunner;
import dev.troupe.engine.cpu.CpuModelRunner;
import dev.troupe.engine.model.DemoModel;
import dev.troupe.engine.model.ModelConfigs;
import dev.troupe.engine.model.ModelLoadException;
import dev.troupe.engine.model.SafetensorsWeights;
import dev.troupe.engine.model.WeightSource;
import java.nio.file.Path;

/**
 * Opens model runners, from a Hugging Face model directory or the built-in demo model. The one
 * place that chooses a backend (today the CPU runner), so the model definition ({@code
 * engine.model}) and each backend stay independent of each other.
 */
public final class ModelRunners {
  private ModelRunners() {}

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
