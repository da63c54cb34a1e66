package dev.troupe.engine.model;

import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.ModelRunner;
import dev.troupe.engine.nd4j.Nd4jModelRunner;
import java.nio.file.Path;

/** Opens model runners: from a Hugging Face model directory, or the built-in demo model. */
public final class ModelRunners {
  private ModelRunners() {}

  /**
   * Loads {@code config.json} and the safetensors weights of {@code modelDir} into an ND4J runner
   * with a KV cache of {@code numBlocks} blocks of {@code blockSize} positions.
   *
   * @throws ModelLoadException naming the file and tensor when the directory cannot be run
   */
  public static ModelRunner open(Path modelDir, int numBlocks, int blockSize) {
    ModelConfig config = ModelConfigs.read(modelDir);
    try (WeightSource w = SafetensorsWeights.open(modelDir)) {
      return Nd4jModelRunner.load(config, w, numBlocks, blockSize);
    }
  }

  /** The built-in demo model ({@link DemoModel}): random weights from a fixed seed. */
  public static ModelRunner openDemo(int numBlocks, int blockSize) {
    try (WeightSource w = DemoModel.weights()) {
      return Nd4jModelRunner.load(DemoModel.config(), w, numBlocks, blockSize);
    }
  }

  /** The demo model's architecture. */
  public static ModelConfig demoConfig() {
    return DemoModel.config();
  }

  /** The demo model's weights (e.g. as the base for training). */
  public static WeightSource demoWeights() {
    return DemoModel.weights();
  }

  /** The weights of a model directory, memory-mapped; close it when done. */
  public static WeightSource weights(Path modelDir) {
    return SafetensorsWeights.open(modelDir);
  }
}
