package dev.troupe.training;

import dev.troupe.adapters.TrainedAdapters;
import dev.troupe.engine.LoraAdapter;
import dev.troupe.protocol.cluster.ModelWorkerProtocol;
import dev.troupe.protocol.cluster.ServedModels;
import dev.troupe.protocol.cluster.TrainingJobProtocol.AdapterCheckpoint;
import java.nio.file.Path;
import java.util.function.Function;
import org.apache.pekko.actor.typed.RecipientRef;

/**
 * Announces a new checkpoint to every replica of its base model, one message each: the replicas on
 * this node take the adapter from memory ({@link TrainedAdapters}), the others read the checkpoint
 * directory. Every replica switches between two engine steps.
 */
public final class ReplicaAnnouncer implements CheckpointListener {
  private final ServedModels served;
  private final Function<String, RecipientRef<ModelWorkerProtocol.Command>> replicas;
  private final TrainedAdapters local;

  /**
   * @param replicas the {@code ModelWorker} of an entity id ({@code <model>#<i>})
   */
  public ReplicaAnnouncer(
      ServedModels served,
      Function<String, RecipientRef<ModelWorkerProtocol.Command>> replicas,
      TrainedAdapters local) {
    this.served = served;
    this.replicas = replicas;
    this.local = local;
  }

  @Override
  public void published(
      String modelId, String baseModel, long step, Path directory, LoraAdapter adapter) {
    if (adapter != null) local.offer(modelId, step, adapter);
    AdapterCheckpoint announcement = new AdapterCheckpoint(modelId, step, directory.toString());
    served.find(baseModel).stream()
        .flatMap(m -> m.entityIds().stream())
        .forEach(id -> replicas.apply(id).tell(announcement));
  }
}
