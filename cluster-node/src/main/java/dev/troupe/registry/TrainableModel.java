package dev.troupe.registry;

import com.fasterxml.jackson.annotation.JsonSubTypes;
import com.fasterxml.jackson.annotation.JsonTypeInfo;
import dev.troupe.persistence.PersistenceSettings;
import dev.troupe.protocol.CborSerializable;
import dev.troupe.protocol.cluster.TrainableModelProtocol;
import dev.troupe.protocol.cluster.TrainableModelProtocol.AddCheckpoint;
import dev.troupe.protocol.cluster.TrainableModelProtocol.Checkpoint;
import dev.troupe.protocol.cluster.TrainableModelProtocol.CheckpointPage;
import dev.troupe.protocol.cluster.TrainableModelProtocol.CheckpointsDeleteRefused;
import dev.troupe.protocol.cluster.TrainableModelProtocol.CheckpointsDeleted;
import dev.troupe.protocol.cluster.TrainableModelProtocol.CheckpointsNotFound;
import dev.troupe.protocol.cluster.TrainableModelProtocol.Command;
import dev.troupe.protocol.cluster.TrainableModelProtocol.Create;
import dev.troupe.protocol.cluster.TrainableModelProtocol.Delete;
import dev.troupe.protocol.cluster.TrainableModelProtocol.DeleteCheckpoints;
import dev.troupe.protocol.cluster.TrainableModelProtocol.Get;
import dev.troupe.protocol.cluster.TrainableModelProtocol.ListCheckpoints;
import dev.troupe.protocol.cluster.TrainableModelProtocol.ModelDeleted;
import dev.troupe.protocol.cluster.TrainableModelProtocol.ModelFound;
import dev.troupe.protocol.cluster.TrainableModelProtocol.ModelInfo;
import dev.troupe.protocol.cluster.TrainableModelProtocol.ModelNotFound;
import dev.troupe.protocol.cluster.TrainableModelProtocol.ModelRejected;
import dev.troupe.protocol.cluster.TrainableModelProtocol.NothingDeleted;
import dev.troupe.protocol.cluster.TrainableModelProtocol.RecordMetrics;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;
import java.util.UUID;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.sharding.typed.javadsl.Entity;
import org.apache.pekko.persistence.typed.PersistenceId;
import org.apache.pekko.persistence.typed.javadsl.CommandHandlerWithReply;
import org.apache.pekko.persistence.typed.javadsl.EventHandler;
import org.apache.pekko.persistence.typed.javadsl.EventSourcedBehaviorWithEnforcedReplies;
import org.apache.pekko.persistence.typed.javadsl.ReplyEffect;
import org.apache.pekko.persistence.typed.javadsl.RetentionCriteria;

/**
 * One trainable model (entity id = model UUID, sharded on role {@code trainer}): its identity and
 * its checkpoints. Step 0 (the base model) exists from creation; the trainer adds steps with {@link
 * AddCheckpoint}; the trajectory log sets {@code <split>/…} metrics with {@link RecordMetrics}.
 * Lifecycle: {@link Unborn} → {@link Active} → {@link Deleted}; each state handles its own
 * commands. Everything survives a restart (journal + snapshots).
 */
public final class TrainableModel
    extends EventSourcedBehaviorWithEnforcedReplies<
        Command, TrainableModel.Event, TrainableModel.State> {

  /** Journal events; type names carry a version so a renamed class still reads old rows. */
  @JsonTypeInfo(use = JsonTypeInfo.Id.NAME, property = "type")
  @JsonSubTypes({
    @JsonSubTypes.Type(value = ModelCreated.class, name = "model.created.v1"),
    @JsonSubTypes.Type(value = CheckpointAdded.class, name = "model.checkpoint-added.v1"),
    @JsonSubTypes.Type(value = MetricsRecorded.class, name = "model.metrics-recorded.v1"),
    @JsonSubTypes.Type(value = CheckpointsRemoved.class, name = "model.checkpoints-removed.v1"),
    @JsonSubTypes.Type(value = ModelRemoved.class, name = "model.removed.v1")
  })
  public sealed interface Event extends CborSerializable {}

  /** The model exists, with checkpoint step 0. */
  public record ModelCreated(ModelInfo info, Checkpoint stepZero) implements Event {}

  /** A newer checkpoint. */
  public record CheckpointAdded(Checkpoint checkpoint) implements Event {}

  /** Metric values merged into checkpoint {@code step}. */
  public record MetricsRecorded(long step, Map<String, Double> metrics) implements Event {}

  /** Checkpoints removed by step. */
  public record CheckpointsRemoved(List<Long> steps) implements Event {}

  /** The model is deleted. */
  public record ModelRemoved(long atMillis) implements Event {}

  /** Lifecycle states; snapshots carry the type name. */
  @JsonTypeInfo(use = JsonTypeInfo.Id.NAME, property = "state")
  @JsonSubTypes({
    @JsonSubTypes.Type(value = Unborn.class, name = "unborn"),
    @JsonSubTypes.Type(value = Active.class, name = "active"),
    @JsonSubTypes.Type(value = Deleted.class, name = "deleted")
  })
  public sealed interface State extends CborSerializable {}

  /** Not created yet. */
  public record Unborn() implements State {
    ReplyEffect<Event, State> onCreate(TrainableModel m, Create cmd) {
      Checkpoint zero =
          new Checkpoint(
              checkpointId(cmd.info().id(), 0), 0, Map.of(), null, System.currentTimeMillis());
      return m.Effect()
          .persist(new ModelCreated(cmd.info(), zero))
          .thenReply(cmd.replyTo(), s -> ((Active) s).found());
    }

    Active created(ModelCreated e) {
      TreeMap<Long, Checkpoint> cps = new TreeMap<>();
      cps.put(0L, e.stepZero());
      return new Active(e.info(), cps);
    }
  }

  /** Live, with at least one checkpoint (the latest is never deleted). */
  public record Active(ModelInfo info, TreeMap<Long, Checkpoint> checkpoints) implements State {
    public Active {
      checkpoints = new TreeMap<>(checkpoints);
    }

    ModelFound found() {
      return new ModelFound(info, checkpoints.lastEntry().getValue(), checkpoints.size());
    }

    long latestStep() {
      return checkpoints.lastKey();
    }

    ReplyEffect<Event, State> onAddCheckpoint(TrainableModel m, AddCheckpoint cmd) {
      Checkpoint latest = checkpoints.lastEntry().getValue();
      if (cmd.step() == latest.step()
          && java.util.Objects.equals(cmd.artifact(), latest.artifact())) {
        return m.Effect().reply(cmd.replyTo(), found());
      }
      if (cmd.step() <= latest.step()) {
        return m.Effect()
            .reply(
                cmd.replyTo(),
                new ModelRejected(
                    "step " + cmd.step() + " is not newer than the latest step " + latest.step()));
      }
      Checkpoint cp =
          new Checkpoint(
              checkpointId(info.id(), cmd.step()),
              cmd.step(),
              cmd.metrics(),
              cmd.artifact(),
              System.currentTimeMillis());
      return m.Effect()
          .persist(new CheckpointAdded(cp))
          .thenReply(cmd.replyTo(), s -> ((Active) s).found());
    }

    ReplyEffect<Event, State> onRecordMetrics(TrainableModel m, RecordMetrics cmd) {
      if (!checkpoints.containsKey(cmd.step())) {
        return m.Effect()
            .reply(cmd.replyTo(), new ModelRejected("no checkpoint at step " + cmd.step()));
      }
      return m.Effect()
          .persist(new MetricsRecorded(cmd.step(), cmd.metrics()))
          .thenReply(cmd.replyTo(), s -> ((Active) s).found());
    }

    ReplyEffect<Event, State> onListCheckpoints(TrainableModel m, ListCheckpoints cmd) {
      NavigableMap<Long, Checkpoint> view =
          cmd.descending() ? checkpoints.descendingMap() : checkpoints;
      if (cmd.after() != null) {
        Long afterStep = null;
        for (Checkpoint c : checkpoints.values()) {
          if (c.id().equals(cmd.after())) afterStep = c.step();
        }
        if (afterStep == null)
          return m.Effect().reply(cmd.replyTo(), new CheckpointPage(List.of(), false));
        view = view.tailMap(afterStep, false);
      }
      List<Checkpoint> page = new ArrayList<>();
      for (Checkpoint c : view.values()) {
        if (page.size() == cmd.limit()) break;
        page.add(c);
      }
      return m.Effect().reply(cmd.replyTo(), new CheckpointPage(page, view.size() > page.size()));
    }

    ReplyEffect<Event, State> onDeleteCheckpoints(TrainableModel m, DeleteCheckpoints cmd) {
      if (cmd.steps().contains(latestStep())) {
        return m.Effect()
            .reply(
                cmd.replyTo(),
                new CheckpointsDeleteRefused(
                    false,
                    "step " + latestStep() + " is the latest checkpoint and cannot be deleted"));
      }
      List<Long> found = new ArrayList<>();
      List<Long> missing = new ArrayList<>();
      for (Long step : new LinkedHashSet<>(cmd.steps())) {
        (checkpoints.containsKey(step) ? found : missing).add(step);
      }
      CheckpointsDeleted reply = new CheckpointsDeleted(found.size(), missing);
      if (found.isEmpty()) return m.Effect().reply(cmd.replyTo(), reply);
      return m.Effect().persist(new CheckpointsRemoved(found)).thenReply(cmd.replyTo(), s -> reply);
    }

    ReplyEffect<Event, State> onDelete(TrainableModel m, Delete cmd) {
      ModelDeleted reply = new ModelDeleted(info, checkpoints.size());
      return m.Effect()
          .persist(new ModelRemoved(System.currentTimeMillis()))
          .thenReply(cmd.replyTo(), s -> reply);
    }

    State apply(Event e) {
      TreeMap<Long, Checkpoint> cps = new TreeMap<>(checkpoints);
      if (e instanceof CheckpointAdded a) {
        cps.put(a.checkpoint().step(), a.checkpoint());
      } else if (e instanceof MetricsRecorded r) {
        Checkpoint c = cps.get(r.step());
        if (c != null) {
          Map<String, Double> merged = new HashMap<>(c.metrics());
          merged.putAll(r.metrics());
          cps.put(
              r.step(),
              new Checkpoint(c.id(), c.step(), merged, c.artifact(), c.createdAtMillis()));
        }
      } else if (e instanceof CheckpointsRemoved d) {
        d.steps().forEach(cps::remove);
      } else if (e instanceof ModelRemoved) {
        return new Deleted(info);
      } else {
        throw new IllegalStateException("unexpected event " + e + " for an active model");
      }
      return new Active(info, cps);
    }
  }

  /** Deleted: behaves as if it never existed (the id is never reused). */
  public record Deleted(ModelInfo info) implements State {}

  /**
   * Checkpoint ids are name-based UUIDs of (model, step): stable, and a cursor survives restarts.
   */
  static String checkpointId(String modelId, long step) {
    return UUID.nameUUIDFromBytes(
            (modelId + "/checkpoint/" + step).getBytes(java.nio.charset.StandardCharsets.UTF_8))
        .toString();
  }

  private final String modelId;
  private final PersistenceSettings settings;

  /** Hosts the entities on role {@code trainer}, a proxy elsewhere. */
  public static void init(ActorSystem<?> system, PersistenceSettings settings) {
    ClusterSharding.get(system)
        .init(
            Entity.of(TrainableModelProtocol.TYPE_KEY, ctx -> create(ctx.getEntityId(), settings))
                .withRole(TrainableModelProtocol.ROLE));
  }

  /** The behaviour for model {@code modelId}. */
  public static Behavior<Command> create(String modelId, PersistenceSettings settings) {
    return new TrainableModel(modelId, settings);
  }

  /** The journal id of a model. */
  public static PersistenceId persistenceId(String modelId) {
    return PersistenceId.of("TrainableModel", modelId);
  }

  private TrainableModel(String modelId, PersistenceSettings settings) {
    super(persistenceId(modelId));
    this.modelId = modelId;
    this.settings = settings;
  }

  @Override
  public State emptyState() {
    return new Unborn();
  }

  @Override
  public RetentionCriteria retentionCriteria() {
    return RetentionCriteria.snapshotEvery(settings.snapshotEvery(), 2);
  }

  @Override
  public CommandHandlerWithReply<Command, Event, State> commandHandler() {
    var b = newCommandHandlerWithReplyBuilder();
    b.forStateType(Unborn.class)
        .onCommand(Create.class, (s, c) -> s.onCreate(this, c))
        .onCommand(Get.class, (s, c) -> Effect().reply(c.replyTo(), notFound()))
        .onCommand(Delete.class, (s, c) -> Effect().reply(c.replyTo(), new NothingDeleted(modelId)))
        .onCommand(
            ListCheckpoints.class,
            (s, c) -> Effect().reply(c.replyTo(), new CheckpointsNotFound(modelId)))
        .onCommand(DeleteCheckpoints.class, (s, c) -> Effect().reply(c.replyTo(), refusedMissing()))
        .onCommand(AddCheckpoint.class, (s, c) -> Effect().reply(c.replyTo(), notFound()))
        .onCommand(RecordMetrics.class, (s, c) -> Effect().reply(c.replyTo(), notFound()));
    b.forStateType(Active.class)
        .onCommand(Create.class, (s, c) -> Effect().reply(c.replyTo(), s.found()))
        .onCommand(Get.class, (s, c) -> Effect().reply(c.replyTo(), s.found()))
        .onCommand(Delete.class, (s, c) -> s.onDelete(this, c))
        .onCommand(ListCheckpoints.class, (s, c) -> s.onListCheckpoints(this, c))
        .onCommand(DeleteCheckpoints.class, (s, c) -> s.onDeleteCheckpoints(this, c))
        .onCommand(AddCheckpoint.class, (s, c) -> s.onAddCheckpoint(this, c))
        .onCommand(RecordMetrics.class, (s, c) -> s.onRecordMetrics(this, c));
    b.forStateType(Deleted.class)
        .onCommand(
            Create.class,
            (s, c) ->
                Effect().reply(c.replyTo(), new ModelRejected("model " + modelId + " was deleted")))
        .onCommand(Get.class, (s, c) -> Effect().reply(c.replyTo(), notFound()))
        .onCommand(Delete.class, (s, c) -> Effect().reply(c.replyTo(), new NothingDeleted(modelId)))
        .onCommand(
            ListCheckpoints.class,
            (s, c) -> Effect().reply(c.replyTo(), new CheckpointsNotFound(modelId)))
        .onCommand(DeleteCheckpoints.class, (s, c) -> Effect().reply(c.replyTo(), refusedMissing()))
        .onCommand(AddCheckpoint.class, (s, c) -> Effect().reply(c.replyTo(), notFound()))
        .onCommand(RecordMetrics.class, (s, c) -> Effect().reply(c.replyTo(), notFound()));
    return b.build();
  }

  private ModelNotFound notFound() {
    return new ModelNotFound(modelId);
  }

  private CheckpointsDeleteRefused refusedMissing() {
    return new CheckpointsDeleteRefused(true, "model " + modelId + " not found");
  }

  @Override
  public EventHandler<State, Event> eventHandler() {
    var b = newEventHandlerBuilder();
    b.forStateType(Unborn.class).onEvent(ModelCreated.class, Unborn::created);
    b.forStateType(Active.class).onAnyEvent((s, e) -> ((Active) s).apply(e));
    return b.build();
  }
}
