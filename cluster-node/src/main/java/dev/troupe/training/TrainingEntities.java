package dev.troupe.training;

import dev.troupe.adapters.CheckpointStore;
import dev.troupe.adapters.TrainedAdapters;
import dev.troupe.protocol.cluster.ModelWorkerProtocol;
import dev.troupe.protocol.cluster.ServedModels;
import dev.troupe.protocol.cluster.TrainableModelProtocol;
import dev.troupe.protocol.cluster.TrainingJobProtocol;
import dev.troupe.worker.GpuReplicas;
import java.util.function.Function;
import java.util.function.Supplier;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.typed.Cluster;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Starts training on a node: the {@link TrainingJob} and {@link TrainingQueue} entities (hosted on
 * role {@code trainer}, proxies elsewhere) and, on trainer nodes, the node's {@link Trainers} (one
 * training thread, training on the CPU or the node's GPU: {@link TrainingBackends}). Call after the
 * data entities ({@code DataEntities.init}: runs list checkpoints with {@code TrainableModel}).
 */
public final class TrainingEntities {
  private static final Logger log = LoggerFactory.getLogger(TrainingEntities.class);

  private TrainingEntities() {}

  /**
   * Production wiring: base models from {@code troupe.models}, checkpoints announced to their
   * replicas (in memory to this node's), the backend as configured.
   */
  public static void init(ActorSystem<?> system) {
    ServedModels served = ServedModels.fromConfig(system.settings().config());
    ClusterSharding sharding = ClusterSharding.get(system);
    init(
        system,
        TrainingSettings.fromConfig(system.settings().config()),
        new ServedBaseModels(
            served, system.settings().config().getString("troupe.worker.device.dtype")),
        new ReplicaAnnouncer(
            served,
            id -> sharding.entityRefFor(ModelWorkerProtocol.TYPE_KEY, id),
            TrainedAdapters.get(system)));
  }

  /** Wiring with explicit parts (tests); the backend as configured ({@link TrainingBackends}). */
  public static void init(
      ActorSystem<?> system,
      TrainingSettings settings,
      Trainers.BaseModels baseModels,
      CheckpointListener checkpoints) {
    init(
        system,
        settings,
        baseModels,
        checkpoints,
        () -> TrainingBackends.fromConfig(system.settings().config()));
  }

  /**
   * What trains a base model's adapters, asked at every job: with {@code share} (ART's shared
   * mode), the runner of a replica serving it on this node's GPU while there is one; else {@code
   * own}, the node's backend.
   */
  static Function<String, TrainingBackend.Factory> backends(
      GpuReplicas gpus, boolean share, TrainingBackend.Factory own) {
    if (!share) return baseModel -> own;
    return baseModel -> gpus.find(baseModel).map(ServingGpuBackend::factory).orElse(own);
  }

  /**
   * Wiring with explicit parts, the backend included (asked for on trainer nodes only: finding a
   * GPU is not for a gateway).
   */
  public static void init(
      ActorSystem<?> system,
      TrainingSettings settings,
      Trainers.BaseModels baseModels,
      CheckpointListener checkpoints,
      Supplier<TrainingBackend.Factory> backends) {
    ClusterSharding sharding = ClusterSharding.get(system);
    Trainers trainers = null;
    if (Cluster.get(system).selfMember().hasRole(TrainingJobProtocol.ROLE)) {
      TrainingBackend.Factory own = backends.get();
      GpuReplicas gpus = GpuReplicas.get(system);
      // the GPU trains LoRA only: full fine-tuning stays on the node's backend (the CPU)
      boolean share = settings.shareServingGpu() && !settings.trainer().lora().fullFineTune();
      Trainers t =
          new Trainers(
              baseModels,
              settings.trainer(),
              backends(gpus, share, own),
              new CheckpointStore(settings.checkpointDir()));
      system.getWhenTerminated().thenRun(t::close);
      trainers = t;
      if (share)
        log.info(
            "Jobs for a model served on this node's GPU train on its replica's runner"
                + " (troupe.training.share-serving-gpu)");
      log.info("Training entities started; checkpoints under {}", settings.checkpointDir());
    }
    TrainingRun.Services runs =
        new TrainingRun.Services(
            id -> sharding.entityRefFor(TrainableModelProtocol.TYPE_KEY, id),
            trainers,
            checkpoints,
            settings.askTimeout());
    TrainingQueue.init(system);
    TrainingJob.init(system, runs, settings.idleTimeout());
  }
}
