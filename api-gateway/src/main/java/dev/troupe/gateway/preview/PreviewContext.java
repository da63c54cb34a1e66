package dev.troupe.gateway.preview;

import static org.apache.pekko.http.javadsl.server.Directives.onSuccess;

import dev.troupe.gateway.http.ApiException;
import dev.troupe.gateway.http.JsonBodies;
import dev.troupe.gateway.http.Stages;
import dev.troupe.protocol.cluster.ServedModels;
import dev.troupe.protocol.cluster.TrainableModelProtocol;
import dev.troupe.protocol.cluster.TrainingJobIndexProtocol;
import dev.troupe.protocol.cluster.TrainingJobProtocol;
import dev.troupe.protocol.cluster.TrajectoryLogProtocol;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import java.util.function.Supplier;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.apache.pekko.actor.typed.RecipientRef;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.sharding.typed.javadsl.Entity;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityTypeKey;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.http.javadsl.server.Route;

/**
 * What the preview routes ({@link PreviewRoutes}: models, checkpoints, trajectories) and the
 * training-job routes ({@code preview.training}) talk to: the sharded data and training entities,
 * the names of the served models ({@code base_model} must be one), and how long to wait. {@link
 * Entities#sharded} is the one place the gateway wires these entities to Cluster Sharding; tests
 * may pass plain actors.
 */
public final class PreviewContext {
  private final ActorSystem<?> system;
  private final Entities entities;
  private final Supplier<? extends Collection<String>> servedModels;
  private final String defaultEntity;
  private final Duration askTimeout;

  /**
   * The entities behind the routes, by id.
   *
   * @param registry the model registry (names to ids, the list of models)
   * @param models the {@code TrainableModel} entities, by model id
   * @param logs the {@code TrajectoryLog} entities, by model id
   * @param jobs the {@code TrainingJob} entities, by job id
   * @param jobIndex the list of jobs: a created job is added to it, {@code GET
   *     /v1/preview/training-jobs} reads it
   */
  public record Entities(
      RecipientRef<TrainableModelProtocol.RegistryCommand> registry,
      Function<String, RecipientRef<TrainableModelProtocol.Command>> models,
      Function<String, RecipientRef<TrajectoryLogProtocol.Command>> logs,
      Function<String, RecipientRef<TrainingJobProtocol.Command>> jobs,
      RecipientRef<TrainingJobIndexProtocol.Command> jobIndex) {
    public Entities {
      Objects.requireNonNull(registry);
      Objects.requireNonNull(models);
      Objects.requireNonNull(logs);
      Objects.requireNonNull(jobs);
      Objects.requireNonNull(jobIndex);
    }

    /**
     * Entity refs through Cluster Sharding. Each entity type whose role this node lacks is started
     * here as a proxy; on a node with the role ({@code trainer}) the node must have started the
     * hosts first ({@code DataEntities.init}, {@code TrainingEntities.init}), as the first {@code
     * init} of a type key is the one that counts.
     */
    public static Entities sharded(ActorSystem<?> system) {
      ClusterSharding sharding = ClusterSharding.get(system);
      proxy(system, TrainableModelProtocol.TYPE_KEY, TrainableModelProtocol.ROLE);
      proxy(system, TrainableModelProtocol.REGISTRY_TYPE_KEY, TrainableModelProtocol.ROLE);
      proxy(system, TrajectoryLogProtocol.TYPE_KEY, TrajectoryLogProtocol.ROLE);
      proxy(system, TrainingJobProtocol.TYPE_KEY, TrainingJobProtocol.ROLE);
      proxy(system, TrainingJobIndexProtocol.TYPE_KEY, TrainingJobIndexProtocol.ROLE);
      return new Entities(
          sharding.entityRefFor(
              TrainableModelProtocol.REGISTRY_TYPE_KEY, TrainableModelProtocol.REGISTRY_ENTITY_ID),
          id -> sharding.entityRefFor(TrainableModelProtocol.TYPE_KEY, id),
          id -> sharding.entityRefFor(TrajectoryLogProtocol.TYPE_KEY, id),
          id -> sharding.entityRefFor(TrainingJobProtocol.TYPE_KEY, id),
          sharding.entityRefFor(
              TrainingJobIndexProtocol.TYPE_KEY, TrainingJobIndexProtocol.ENTITY_ID));
    }

    private static <T> void proxy(ActorSystem<?> system, EntityTypeKey<T> key, String role) {
      if (Cluster.get(system).selfMember().hasRole(role)) return;
      ClusterSharding.get(system).init(Entity.of(key, ctx -> Behaviors.<T>empty()).withRole(role));
    }
  }

  public PreviewContext(
      ActorSystem<?> system,
      Entities entities,
      Supplier<? extends Collection<String>> servedModels,
      String defaultEntity,
      Duration askTimeout) {
    this.system = Objects.requireNonNull(system);
    this.entities = Objects.requireNonNull(entities);
    this.servedModels = Objects.requireNonNull(servedModels);
    this.defaultEntity = Objects.requireNonNull(defaultEntity);
    this.askTimeout = Objects.requireNonNull(askTimeout);
  }

  /** The entity for a key's owner when a request names none. */
  public static final String DEFAULT_ENTITY = "troupe";

  /**
   * The cluster wiring ({@link Entities#sharded}) with the served models of {@code troupe.models}
   * and the default entity.
   */
  public static PreviewContext sharded(ActorSystem<?> system, Duration askTimeout) {
    List<String> names =
        ServedModels.fromConfig(system.settings().config()).models().stream()
            .map(ServedModels.ServedModel::name)
            .toList();
    return new PreviewContext(
        system, Entities.sharded(system), () -> names, DEFAULT_ENTITY, askTimeout);
  }

  /** Where blocking work of a route (parsing a large body) runs. */
  Executor blockingExecutor() {
    return system.dispatchers().lookup(DispatcherSelector.blocking());
  }

  String defaultEntity() {
    return defaultEntity;
  }

  Duration askTimeout() {
    return askTimeout;
  }

  List<String> servedModels() {
    return servedModels.get().stream().sorted().toList();
  }

  <R> CompletionStage<R> askRegistry(
      org.apache.pekko.japi.function.Function<ActorRef<R>, TrainableModelProtocol.RegistryCommand>
          message) {
    return ask(entities.registry(), message, askTimeout, STORE);
  }

  public <R> CompletionStage<R> askModel(
      String id,
      org.apache.pekko.japi.function.Function<ActorRef<R>, TrainableModelProtocol.Command>
          message) {
    return ask(entities.models().apply(id), message, askTimeout, STORE);
  }

  /**
   * The routes' ask-and-answer: asks model {@code id}'s entity and completes with {@code toBody} of
   * the reply as JSON; what {@code toBody} throws (404, 400) is the error reply.
   */
  <R> Route replyFromModel(
      String id,
      org.apache.pekko.japi.function.Function<ActorRef<R>, TrainableModelProtocol.Command> message,
      Function<? super R, ?> toBody) {
    return onSuccess(askModel(id, message).thenApply(toBody), JsonBodies::completeJson);
  }

  <R> CompletionStage<R> askLog(
      String id,
      org.apache.pekko.japi.function.Function<ActorRef<R>, TrajectoryLogProtocol.Command> message,
      Duration timeout) {
    return ask(entities.logs().apply(id), message, timeout, STORE);
  }

  public <R> CompletionStage<R> askJob(
      String id,
      org.apache.pekko.japi.function.Function<ActorRef<R>, TrainingJobProtocol.Command> message) {
    return ask(entities.jobs().apply(id), message, askTimeout, TRAINING);
  }

  public <R> CompletionStage<R> askJobIndex(
      org.apache.pekko.japi.function.Function<ActorRef<R>, TrainingJobIndexProtocol.Command>
          message) {
    return ask(entities.jobIndex(), message, askTimeout, TRAINING);
  }

  public void tellJobIndex(TrainingJobIndexProtocol.Command message) {
    entities.jobIndex().tell(message);
  }

  // What a timed-out ask answers (503): the data entities and the training ones are told apart.
  private static final String STORE = "The model store did not answer in time; retry later.";
  private static final String TRAINING =
      "The training service did not answer in time; retry later.";

  private <T, R> CompletionStage<R> ask(
      RecipientRef<T> to,
      org.apache.pekko.japi.function.Function<ActorRef<R>, T> message,
      Duration timeout,
      String timedOut) {
    return Stages.on(system, AskPattern.<T, R>ask(to, message, timeout, system.scheduler()))
        .exceptionally(
            e -> {
              Throwable cause =
                  e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
              if (cause instanceof TimeoutException) throw ApiException.overloaded(timedOut);
              if (cause instanceof RuntimeException re) throw re;
              throw new IllegalStateException(cause);
            });
  }
}
