package dev.troupe.node;

import com.typesafe.config.Config;
import dev.troupe.engine.core.EngineSettings;
import dev.troupe.engine.runner.DeviceSettings;
import dev.troupe.engine.runner.SharedTraining;
import dev.troupe.engine.structured.StructuredOutputSettings;
import dev.troupe.protocol.cluster.ModelWorkerProtocol;
import dev.troupe.protocol.cluster.ServedModels;
import dev.troupe.protocol.cluster.TrainingJobProtocol;
import java.time.Duration;
import java.util.List;

/**
 * What a node runs, read once from config: the served models ({@code troupe.models}), the engine
 * sizing ({@code troupe.worker.engine}) and node behaviour ({@code troupe.node}).
 *
 * @param metricsLogInterval how often each worker logs its engine metrics; zero = never
 * @param startReplicas worker nodes wake every configured replica at start
 * @param device where replicas run ({@code troupe.worker.device})
 * @param structuredOutputs grammar bounds and cache ({@code troupe.worker.structured-outputs})
 */
public record NodeSettings(
    ServedModels models,
    EngineSettings engine,
    Duration metricsLogInterval,
    boolean startReplicas,
    DeviceSettings device,
    StructuredOutputSettings structuredOutputs) {

  /** Config path of the dispatcher ModelWorker entities run on. */
  public static final String WORKER_DISPATCHER = dev.troupe.worker.ModelWorker.DISPATCHER;

  public static NodeSettings fromConfig(Config config) {
    dev.troupe.worker.KvRoles.fromConfig(config); // a bad role fails the start, not a replica
    return new NodeSettings(
        ServedModels.fromConfig(config),
        EngineSettings.fromConfig(config.getConfig("troupe.worker.engine")),
        config.getDuration("troupe.worker.metrics-log-interval"),
        config.getBoolean("troupe.node.start-replicas"),
        DeviceSettings.fromConfig(config.getConfig("troupe.worker.device"))
            .withTraining(sharedTraining(config)),
        StructuredOutputSettings.fromConfig(config.getConfig("troupe.worker.structured-outputs")));
  }

  /**
   * What a GPU replica keeps for a trainer on its runner: on a node that serves and trains, with
   * {@code troupe.training.share-serving-gpu} on (the GPU trains LoRA only: not under full
   * fine-tuning); else null.
   */
  static SharedTraining sharedTraining(Config config) {
    List<String> roles = config.getStringList("pekko.cluster.roles");
    Config t = config.getConfig("troupe.training");
    if (!roles.contains(ModelWorkerProtocol.ROLE)
        || !roles.contains(TrainingJobProtocol.ROLE)
        || !t.getBoolean("share-serving-gpu")
        || t.getBoolean("full-fine-tune")) return null;
    return new SharedTraining(
        t.getInt("lora.rank"),
        t.getStringList("lora.target-modules"),
        t.getInt("max-sequence-length"));
  }
}
