package dev.troupe.training;

import com.typesafe.config.Config;
import dev.troupe.training.nd4j.LoraSpec;
import java.nio.file.Path;
import java.time.Duration;

/**
 * {@code troupe.training}, read once at start.
 *
 * @param checkpointDir where LoRA checkpoints are written (shared storage across nodes)
 * @param trainer row length, adapter shape and optimizer
 * @param askTimeout how long a run waits for the model's entity to answer
 * @param idleTimeout how long a finished job stays in memory after it was last read
 * @param shareServingGpu a job for a model a replica serves on this node's GPU trains on that
 *     replica's runner ({@code share-serving-gpu}; LoRA only)
 */
public record TrainingSettings(
    Path checkpointDir,
    Trainer.Settings trainer,
    Duration askTimeout,
    Duration idleTimeout,
    boolean shareServingGpu) {

  /** Settings that train on a serving replica's GPU where there is one (the default). */
  public TrainingSettings(
      Path checkpointDir, Trainer.Settings trainer, Duration askTimeout, Duration idleTimeout) {
    this(checkpointDir, trainer, askTimeout, idleTimeout, true);
  }

  public static TrainingSettings fromConfig(Config root) {
    Config c = root.getConfig("troupe.training");
    Path dir = Path.of(c.getString("checkpoint-dir"));
    if (!dir.isAbsolute())
      dir = Path.of(root.getString("troupe.persistence.data-dir")).resolve(dir);
    Config l = c.getConfig("lora");
    LoraSpec lora =
        new LoraSpec(
            l.getInt("rank"),
            l.getDouble("alpha"),
            l.getStringList("target-modules"),
            c.getBoolean("full-fine-tune"),
            l.getLong("seed"));
    Config o = c.getConfig("optimizer");
    AdamW.Hyper hyper =
        new AdamW.Hyper(
            o.getDouble("beta1"),
            o.getDouble("beta2"),
            o.getDouble("eps"),
            o.getDouble("weight-decay"),
            o.getDouble("max-grad-norm"));
    return new TrainingSettings(
        dir.toAbsolutePath().normalize(),
        new Trainer.Settings(c.getInt("max-sequence-length"), lora, hyper),
        c.getDuration("ask-timeout"),
        c.getDuration("finished-job-idle-timeout"),
        c.getBoolean("share-serving-gpu"));
  }
}
