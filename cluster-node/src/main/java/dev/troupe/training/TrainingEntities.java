package dev.troupe.training;

import dev.troupe.adapters.CheckpointStore;
import dev.troupe.protocol.cluster.ModelWorkerProtocol;
import dev.troupe.protocol.cluster.ServedModels;
import dev.troupe.protocol.cluster.TrainableModelProtocol;
import dev.troupe.protocol.cluster.TrainingJobProtocol;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.cluster.sharding.typed.ClusterShardingSettings;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.sharding.typed.javadsl.Entity;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Starts the training entities on a node: {@code TrainingJob} and {@code ModelTrainer}, sharded on
 * role {@code trainer}, with one training thread per node, training on the CPU or the node's GPU
 * ({@link TrainingBackends}). Call after the data entities ({@code DataEntities.init}: the trainer
 * lists checkpoints with {@code TrainableModel}).
 */
public final class TrainingEntities {
  private static final Logger log = LoggerFactory.getLogger(TrainingEntities.class);

  private TrainingEntities() {}

  /**
   * Production wiring: base models from {@code troupe.models}, checkpoints announced to workers.
   */
  public static void init(ActorSystem<?> system) {
    TrainingSettings settings = TrainingSettings.fromConfig(system.settings().config());
    ServedModels served = ServedModels.fromConfig(system.settings().config());
    ClusterSharding sharding = ClusterSharding.get(system);
    JobRunner.CheckpointListener workers =
        (modelId, baseModel, step, dir, adapter) -> {
          // every replica of the base model switches between two engine steps
          for (ServedModels.ServedModel m : served.find(baseModel).stream().toList())
            for (String id : m.entityIds())
              sharding
                  .entityRefFor(ModelWorkerProtocol.TYPE_KEY, id)
                  .tell(new TrainingJobProtocol.AdapterCheckpoint(modelId, step, dir.toString()));
        };
    init(
        system,
        settings,
        new ServedBaseModels(
            served, system.settings().config().getString("troupe.worker.device.dtype")),
        workers);
  }

  /** Wiring with explicit parts (tests); the backend as configured ({@link TrainingBackends}). */
  public static void init(
      ActorSystem<?> system,
      TrainingSettings settings,
      JobRunner.BaseModels baseModels,
      JobRunner.CheckpointListener listener) {
    init(
        system,
        settings,
        baseModels,
        listener,
        TrainingBackends.fromConfig(system.settings().config()));
  }

  /** Wiring with explicit parts, the backend included. */
  public static void init(
      ActorSystem<?> system,
      TrainingSettings settings,
      JobRunner.BaseModels baseModels,
      JobRunner.CheckpointListener listener,
      TrainingBackend.Factory backends) {
    ClusterSharding sharding = ClusterSharding.get(system);
    ExecutorService trainingThread =
        Executors.newSingleThreadExecutor(
            r -> {
              Thread t = new Thread(r, "troupe-trainer");
              t.setDaemon(true);
              return t;
            });
    system.getWhenTerminated().thenRun(trainingThread::shutdownNow);
    JobRunner runner =
        new JobRunner(
            system,
            id -> sharding.entityRefFor(TrainingJobProtocol.TYPE_KEY, id),
            id -> sharding.entityRefFor(TrainableModelProtocol.TYPE_KEY, id),
            baseModels,
            settings.trainer(),
            backends,
            new CheckpointStore(settings.checkpointDir()),
            listener,
            settings.askTimeout());
    sharding.init(
        Entity.of(
                TrainingJobProtocol.TYPE_KEY,
                ctx ->
                    TrainingJob.create(
                        ctx.getEntityId(),
                        id -> sharding.entityRefFor(TrainingJobProtocol.TRAINER_TYPE_KEY, id)))
            .withRole(TrainingJobProtocol.ROLE));
    sharding.init(
        Entity.of(
                TrainingJobProtocol.TRAINER_TYPE_KEY,
                ctx -> ModelTrainer.create(ctx.getEntityId(), runner, trainingThread))
            .withRole(TrainingJobProtocol.ROLE)
            // a running job must not be passivated away from its training thread
            .withSettings(ClusterShardingSettings.create(system).withNoPassivationStrategy()));
    log.info("Training entities started; checkpoints under {}", settings.checkpointDir());
  }
}
