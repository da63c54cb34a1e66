package dev.troupe.gateway.preview;

import static org.apache.pekko.http.javadsl.server.Directives.onSuccess;

import dev.troupe.gateway.http.ApiException;
import dev.troupe.gateway.http.JsonBodies;
import dev.troupe.protocol.cluster.ServedModels;
import dev.troupe.protocol.cluster.TrainableModelProtocol;
import dev.troupe.protocol.cluster.TrajectoryLogProtocol;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
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
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.http.javadsl.server.Route;

/**
 * What the preview routes talk to: the model registry, the {@code TrainableModel} and {@code
 * TrajectoryLog} entities (by model id), the names of the served models ({@code base_model} must be
 * one), and how long to wait. {@link #sharded} is the cluster wiring; tests pass plain actors.
 */
public final class PreviewContext {
  private final ActorSystem<?> system;
  private final RecipientRef<TrainableModelProtocol.RegistryCommand> registry;
  private final Function<String, RecipientRef<TrainableModelProtocol.Command>> models;
  private final Function<String, RecipientRef<TrajectoryLogProtocol.Command>> logs;
  private final Supplier<? extends Collection<String>> servedModels;
  private final String defaultEntity;
  private final Duration askTimeout;

  public PreviewContext(
      ActorSystem<?> system,
      RecipientRef<TrainableModelProtocol.RegistryCommand> registry,
      Function<String, RecipientRef<TrainableModelProtocol.Command>> models,
      Function<String, RecipientRef<TrajectoryLogProtocol.Command>> logs,
      Supplier<? extends Collection<String>> servedModels,
      String defaultEntity,
      Duration askTimeout) {
    this.system = Objects.requireNonNull(system);
    this.registry = Objects.requireNonNull(registry);
    this.models = Objects.requireNonNull(models);
    this.logs = Objects.requireNonNull(logs);
    this.servedModels = Objects.requireNonNull(servedModels);
    this.defaultEntity = Objects.requireNonNull(defaultEntity);
    this.askTimeout = Objects.requireNonNull(askTimeout);
  }

  /** The entity for a key's owner when a request names none. */
  public static final String DEFAULT_ENTITY = "troupe";

  /**
   * {@link #sharded(ActorSystem, Supplier, String, Duration)} with the served models of {@code
   * troupe.models} and the default entity.
   */
  public static PreviewContext sharded(ActorSystem<?> system, Duration askTimeout) {
    List<String> names =
        ServedModels.fromConfig(system.settings().config()).models().stream()
            .map(ServedModels.ServedModel::name)
            .toList();
    return sharded(system, () -> names, DEFAULT_ENTITY, askTimeout);
  }

  /**
   * The cluster wiring: entity refs through Cluster Sharding. On a node without the {@code trainer}
   * role the entity types are started here as proxies; on a trainer node they must already be
   * started (deploy's Main calls {@code DataEntities.init} first).
   */
  public static PreviewContext sharded(
      ActorSystem<?> system,
      Supplier<? extends Collection<String>> servedModels,
      String defaultEntity,
      Duration askTimeout) {
    ClusterSharding sharding = ClusterSharding.get(system);
    if (!Cluster.get(system).selfMember().hasRole(TrainableModelProtocol.ROLE)) {
      sharding.init(
          Entity.of(
                  TrainableModelProtocol.TYPE_KEY,
                  ctx -> Behaviors.<TrainableModelProtocol.Command>empty())
              .withRole(TrainableModelProtocol.ROLE));
      sharding.init(
          Entity.of(
                  TrainableModelProtocol.REGISTRY_TYPE_KEY,
                  ctx -> Behaviors.<TrainableModelProtocol.RegistryCommand>empty())
              .withRole(TrainableModelProtocol.ROLE));
      sharding.init(
          Entity.of(
                  TrajectoryLogProtocol.TYPE_KEY,
                  ctx -> Behaviors.<TrajectoryLogProtocol.Command>empty())
              .withRole(TrajectoryLogProtocol.ROLE));
    }
    return new PreviewContext(
        system,
        sharding.entityRefFor(
            TrainableModelProtocol.REGISTRY_TYPE_KEY, TrainableModelProtocol.REGISTRY_ENTITY_ID),
        id -> sharding.entityRefFor(TrainableModelProtocol.TYPE_KEY, id),
        id -> sharding.entityRefFor(TrajectoryLogProtocol.TYPE_KEY, id),
        servedModels,
        defaultEntity,
        askTimeout);
  }

  ActorSystem<?> system() {
    return system;
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
    return ask(registry, message, askTimeout);
  }

  <R> CompletionStage<R> askModel(
      String id,
      org.apache.pekko.japi.function.Function<ActorRef<R>, TrainableModelProtocol.Command>
          message) {
    return ask(models.apply(id), message, askTimeout);
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
    return ask(logs.apply(id), message, timeout);
  }

  private <T, R> CompletionStage<R> ask(
      RecipientRef<T> to,
      org.apache.pekko.japi.function.Function<ActorRef<R>, T> message,
      Duration timeout) {
    return AskPattern.<T, R>ask(to, message, timeout, system.scheduler())
        .exceptionally(
            e -> {
              Throwable cause =
                  e instanceof java.util.concurrent.CompletionException && e.getCause() != null
                      ? e.getCause()
                      : e;
              if (cause instanceof TimeoutException)
                throw ApiException.overloaded(
                    "The model store did not answer in time; retry later.");
              if (cause instanceof RuntimeException re) throw re;
              throw new IllegalStateException(cause);
            });
  }
}
