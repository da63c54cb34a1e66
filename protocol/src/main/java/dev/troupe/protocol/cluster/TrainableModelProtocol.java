package dev.troupe.protocol.cluster;

import static dev.troupe.protocol.StorableText.requireStorable;

import dev.troupe.protocol.CborSerializable;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityTypeKey;

/**
 * What the gateway and the trainer say to the trainable-model side: the {@code TrainableModel}
 * entity (one per model, id = model UUID) and the {@code ModelRegistry} entity (one per cluster, id
 * {@link #REGISTRY_ENTITY_ID}) that keeps (entity, project, name) unique and lists models.
 */
public final class TrainableModelProtocol {
  /** One entity per trainable model; entity id = the model's UUID. */
  public static final EntityTypeKey<Command> TYPE_KEY =
      EntityTypeKey.create(Command.class, "TrainableModel");

  /** The registry: one entity holding names and the creation-ordered list of models. */
  public static final EntityTypeKey<RegistryCommand> REGISTRY_TYPE_KEY =
      EntityTypeKey.create(RegistryCommand.class, "ModelRegistry");

  /** The registry's single entity id. */
  public static final String REGISTRY_ENTITY_ID = "registry";

  /** Nodes that host these entities. */
  public static final String ROLE = Roles.TRAINER;

  private TrainableModelProtocol() {}

  /** A registered model, as the registry and the entity know it. */
  public record ModelInfo(
      String id,
      String entity,
      String project,
      String name,
      String baseModel,
      String runId,
      long createdAtMillis)
      implements CborSerializable {
    public ModelInfo {
      Objects.requireNonNull(id, "id");
      Objects.requireNonNull(entity, "entity");
      Objects.requireNonNull(project, "project");
      Objects.requireNonNull(name, "name");
      Objects.requireNonNull(baseModel, "baseModel");
      // It is journaled (the registry's and the model's events): text CBOR cannot write is refused.
      requireStorable(entity, "entity");
      requireStorable(project, "project");
      requireStorable(name, "name");
      requireStorable(baseModel, "baseModel");
      requireStorable(runId, "runId");
    }
  }

  /**
   * One checkpoint of a model: step 0 exists from creation (the base model); training adds the next
   * steps. {@code artifact} is where the trainer stored the adapter, null for step 0.
   */
  public record Checkpoint(
      String id, long step, Map<String, Double> metrics, String artifact, long createdAtMillis)
      implements CborSerializable {
    public Checkpoint {
      Objects.requireNonNull(id, "id");
      if (step < 0) throw new IllegalArgumentException("step must be >= 0");
      metrics = Map.copyOf(metrics);
    }
  }

  // ---------------------------------------------------------------- TrainableModel entity

  /** Commands of the {@code TrainableModel} entity. */
  public interface Command extends CborSerializable {}

  /** Creates the model with checkpoint step 0; idempotent for the same {@code info}. */
  public record Create(ModelInfo info, ActorRef<ModelReply> replyTo) implements Command {}

  /** Reads the model and its latest step. */
  public record Get(ActorRef<ModelReply> replyTo) implements Command {}

  /** Deletes the model and all its checkpoints. */
  public record Delete(ActorRef<DeleteReply> replyTo) implements Command {}

  /** Lists checkpoints by step; {@code after} is a checkpoint id or null. */
  public record ListCheckpoints(
      String after, int limit, boolean descending, ActorRef<CheckpointsReply> replyTo)
      implements Command {
    public ListCheckpoints {
      if (limit < 1) throw new IllegalArgumentException("limit must be >= 1");
    }
  }

  /** Deletes checkpoints by step; the latest step is kept (it is what is served). */
  public record DeleteCheckpoints(List<Long> steps, ActorRef<DeleteCheckpointsReply> replyTo)
      implements Command {
    public DeleteCheckpoints {
      steps = List.copyOf(steps);
    }
  }

  /**
   * Adds a checkpoint (the trainer, after a training step is stored). {@code step} must be greater
   * than the latest step; re-sending the latest step with the same artifact is acknowledged again.
   */
  public record AddCheckpoint(
      long step, Map<String, Double> metrics, String artifact, ActorRef<ModelReply> replyTo)
      implements Command {
    public AddCheckpoint {
      metrics = Map.copyOf(metrics);
    }
  }

  /**
   * Sets metric values on one checkpoint (merged by key, later values win): the trajectory log
   * records {@code <split>/reward} etc. here.
   */
  public record RecordMetrics(long step, Map<String, Double> metrics, ActorRef<ModelReply> replyTo)
      implements Command {
    public RecordMetrics {
      metrics = Map.copyOf(metrics);
    }
  }

  /** Reply to {@link Create}, {@link Get}, {@link AddCheckpoint}, {@link RecordMetrics}. */
  public sealed interface ModelReply extends CborSerializable {}

  /** The model exists; {@code latest} is its newest checkpoint. */
  public record ModelFound(ModelInfo info, Checkpoint latest, int checkpointCount)
      implements ModelReply {}

  /** No such model (never created, or deleted). */
  public record ModelNotFound(String id) implements ModelReply {}

  /** The command was understood but refused (e.g. a step that is not newer). */
  public record ModelRejected(String message) implements ModelReply {}

  /** Reply to {@link Delete}. */
  public sealed interface DeleteReply extends CborSerializable {}

  /** The model is gone. */
  public record ModelDeleted(ModelInfo info, int deletedCheckpoints) implements DeleteReply {}

  /** Nothing to delete. */
  public record NothingDeleted(String id) implements DeleteReply {}

  /** Reply to {@link ListCheckpoints}. */
  public sealed interface CheckpointsReply extends CborSerializable {}

  /** One page of checkpoints. */
  public record CheckpointPage(List<Checkpoint> data, boolean hasMore) implements CheckpointsReply {
    public CheckpointPage {
      data = List.copyOf(data);
    }
  }

  /** The model does not exist. */
  public record CheckpointsNotFound(String id) implements CheckpointsReply {}

  /** Reply to {@link DeleteCheckpoints}. */
  public sealed interface DeleteCheckpointsReply extends CborSerializable {}

  /** What was deleted and which steps did not exist. */
  public record CheckpointsDeleted(int deletedCount, List<Long> notFoundSteps)
      implements DeleteCheckpointsReply {
    public CheckpointsDeleted {
      notFoundSteps = List.copyOf(notFoundSteps);
    }
  }

  /** The request cannot be done (unknown model, or the latest step named). */
  public record CheckpointsDeleteRefused(boolean modelMissing, String message)
      implements DeleteCheckpointsReply {}

  // ---------------------------------------------------------------- ModelRegistry entity

  /** Commands of the {@code ModelRegistry} entity. */
  public interface RegistryCommand extends CborSerializable {}

  /**
   * Claims (entity, project, name) for a new model with id {@code newId}; when the name is taken
   * the reply carries the existing model.
   */
  public record Register(
      String newId,
      String entity,
      String project,
      String name,
      String baseModel,
      ActorRef<RegisterReply> replyTo)
      implements RegistryCommand {
    /**
     * Its text becomes a journaled {@link ModelInfo}: refused here, before it reaches the entity.
     */
    public Register {
      requireStorable(entity, "entity");
      requireStorable(project, "project");
      requireStorable(name, "name");
      requireStorable(baseModel, "baseModel");
    }
  }

  /** Forgets a deleted model (its name becomes free). */
  public record Unregister(String id, ActorRef<Unregistered> replyTo) implements RegistryCommand {}

  /** Lists models in creation order; {@code after} is a model id or null. */
  public record ListModels(String after, int limit, ActorRef<ModelPage> replyTo)
      implements RegistryCommand {
    public ListModels {
      if (limit < 1) throw new IllegalArgumentException("limit must be >= 1");
    }
  }

  /** Reply to {@link Register}. */
  public sealed interface RegisterReply extends CborSerializable {}

  /** The name was free and is now this model's. */
  public record Registered(ModelInfo info) implements RegisterReply {}

  /** The name belongs to {@code existing}. */
  public record NameTaken(ModelInfo existing) implements RegisterReply {}

  /** Reply to {@link Unregister}. */
  public record Unregistered(String id, boolean wasRegistered) implements CborSerializable {}

  /** Reply to {@link ListModels}. */
  public record ModelPage(List<ModelInfo> data, boolean hasMore) implements CborSerializable {
    public ModelPage {
      data = List.copyOf(data);
    }
  }
}
