package dev.troupe.training;

import dev.troupe.engine.LoraAdapter;
import java.nio.file.Path;

/** Told about every checkpoint a training run lists (the model's workers switch to it). */
@FunctionalInterface
public interface CheckpointListener {
  /**
   * @param directory the stored checkpoint
   * @param adapter the same adapter in memory, null when only the directory is at hand (a full
   *     fine-tune, or a step an earlier run listed)
   */
  void published(String modelId, String baseModel, long step, Path directory, LoraAdapter adapter);
}
