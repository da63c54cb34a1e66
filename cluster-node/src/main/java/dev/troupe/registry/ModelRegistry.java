package dev.troupe.registry;

import com.fasterxml.jackson.annotation.JsonSubTypes;
import com.fasterxml.jackson.annotation.JsonTypeInfo;
import dev.troupe.persistence.PersistenceSettings;
import dev.troupe.protocol.CborSerializable;
import dev.troupe.protocol.cluster.TrainableModelProtocol;
import dev.troupe.protocol.cluster.TrainableModelProtocol.ListModels;
import dev.troupe.protocol.cluster.TrainableModelProtocol.ModelInfo;
import dev.troupe.protocol.cluster.TrainableModelProtocol.ModelPage;
import dev.troupe.protocol.cluster.TrainableModelProtocol.NameTaken;
import dev.troupe.protocol.cluster.TrainableModelProtocol.Register;
import dev.troupe.protocol.cluster.TrainableModelProtocol.Registered;
import dev.troupe.protocol.cluster.TrainableModelProtocol.RegistryCommand;
import dev.troupe.protocol.cluster.TrainableModelProtocol.Unregister;
import dev.troupe.protocol.cluster.TrainableModelProtocol.Unregistered;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
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
 * The model registry (one entity, id {@code registry}, sharded on role {@code trainer}): keeps
 * (entity, project, name) unique and lists models in creation order for cursor pages. The model's
 * own state (checkpoints) is the {@link TrainableModel} entity; the gateway registers here first,
 * then creates the entity (idempotently, so a retried registration repairs a half-done one).
 * Survives a restart (journal + snapshots).
 */
public final class ModelRegistry
    extends EventSourcedBehaviorWithEnforcedReplies<
        RegistryCommand, ModelRegistry.Event, ModelRegistry.State> {
  private static final SecureRandom RANDOM = new SecureRandom();

  /** Journal events; type names carry a version so a renamed class still reads old rows. */
  @JsonTypeInfo(use = JsonTypeInfo.Id.NAME, property = "type")
  @JsonSubTypes({
    @JsonSubTypes.Type(value = ModelRegistered.class, name = "registry.registered.v1"),
    @JsonSubTypes.Type(value = ModelUnregistered.class, name = "registry.unregistered.v1")
  })
  public sealed interface Event extends CborSerializable {}

  /** A model and its name. */
  public record ModelRegistered(ModelInfo info) implements Event {}

  /** A deleted model's name is free again. */
  public record ModelUnregistered(String id) implements Event {}

  /** Models by id in creation order. */
  public record State(Map<String, ModelInfo> models) implements CborSerializable {
    public State {
      models = Collections.unmodifiableMap(new LinkedHashMap<>(models));
    }

    ModelInfo byName(String entity, String project, String name) {
      for (ModelInfo m : models.values()) {
        if (m.entity().equals(entity) && m.project().equals(project) && m.name().equals(name))
          return m;
      }
      return null;
    }
  }

  /** Hosts the registry on role {@code trainer}, a proxy elsewhere. */
  public static void init(ActorSystem<?> system, PersistenceSettings settings) {
    ClusterSharding.get(system)
        .init(
            Entity.of(
                    TrainableModelProtocol.REGISTRY_TYPE_KEY,
                    ctx -> create(ctx.getEntityId(), settings))
                .withRole(TrainableModelProtocol.ROLE));
  }

  /** The behaviour of the registry entity {@code entityId}. */
  public static Behavior<RegistryCommand> create(String entityId, PersistenceSettings settings) {
    return new ModelRegistry(entityId, settings);
  }

  private final PersistenceSettings settings;

  private ModelRegistry(String entityId, PersistenceSettings settings) {
    super(PersistenceId.of("ModelRegistry", entityId));
    this.settings = settings;
  }

  @Override
  public State emptyState() {
    return new State(Map.of());
  }

  @Override
  public RetentionCriteria retentionCriteria() {
    return RetentionCriteria.snapshotEvery(settings.snapshotEvery(), 2);
  }

  @Override
  public CommandHandlerWithReply<RegistryCommand, Event, State> commandHandler() {
    return newCommandHandlerWithReplyBuilder()
        .forAnyState()
        .onCommand(Register.class, this::onRegister)
        .onCommand(Unregister.class, this::onUnregister)
        .onCommand(ListModels.class, this::onList)
        .build();
  }

  private ReplyEffect<Event, State> onRegister(State state, Register cmd) {
    ModelInfo existing = state.byName(cmd.entity(), cmd.project(), cmd.name());
    if (existing != null) return Effect().reply(cmd.replyTo(), new NameTaken(existing));
    ModelInfo info =
        new ModelInfo(
            cmd.newId(),
            cmd.entity(),
            cmd.project(),
            cmd.name(),
            cmd.baseModel(),
            runId(),
            System.currentTimeMillis());
    return Effect()
        .persist(new ModelRegistered(info))
        .thenReply(cmd.replyTo(), s -> new Registered(info));
  }

  private ReplyEffect<Event, State> onUnregister(State state, Unregister cmd) {
    if (!state.models().containsKey(cmd.id()))
      return Effect().reply(cmd.replyTo(), new Unregistered(cmd.id(), false));
    return Effect()
        .persist(new ModelUnregistered(cmd.id()))
        .thenReply(cmd.replyTo(), s -> new Unregistered(cmd.id(), true));
  }

  private ReplyEffect<Event, State> onList(State state, ListModels cmd) {
    List<ModelInfo> page = new ArrayList<>();
    boolean started = cmd.after() == null;
    boolean more = false;
    for (ModelInfo m : state.models().values()) {
      if (!started) {
        started = m.id().equals(cmd.after());
        continue;
      }
      if (page.size() == cmd.limit()) {
        more = true;
        break;
      }
      page.add(m);
    }
    return Effect().reply(cmd.replyTo(), new ModelPage(page, more));
  }

  @Override
  public EventHandler<State, Event> eventHandler() {
    return newEventHandlerBuilder()
        .forAnyState()
        .onEvent(
            ModelRegistered.class,
            (s, e) -> {
              LinkedHashMap<String, ModelInfo> m = new LinkedHashMap<>(s.models());
              m.put(e.info().id(), e.info());
              return new State(m);
            })
        .onEvent(
            ModelUnregistered.class,
            (s, e) -> {
              LinkedHashMap<String, ModelInfo> m = new LinkedHashMap<>(s.models());
              m.remove(e.id());
              return new State(m);
            })
        .build();
  }

  /** A W&B-style run id: 8 lowercase base-36 characters. */
  private static String runId() {
    String alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
    StringBuilder sb = new StringBuilder(8);
    for (int i = 0; i < 8; i++) sb.append(alphabet.charAt(RANDOM.nextInt(alphabet.length())));
    return sb.toString();
  }
}
