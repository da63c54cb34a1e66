package dev.troupe.gateway.preview.training;

import dev.troupe.gateway.http.ApiException;
import dev.troupe.protocol.cluster.TrainableModelProtocol;
import dev.troupe.protocol.cluster.TrainingJobIndexProtocol;
import dev.troupe.protocol.cluster.TrainingJobProtocol;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.RecipientRef;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.sharding.typed.javadsl.Entity;
import org.apache.pekko.cluster.typed.Cluster;

/**
 * What the training-job routes talk to: the {@code TrainingJob} entities (by job id), the {@code
 * TrainableModel} entities (by model id) and the {@code TrainingJobIndex} (the list of jobs).
 * {@link #sharded} is the cluster wiring; tests pass plain actors.
 */
public final class TrainingContext {
  private final ActorSystem<?> system;
  private final Function<String, RecipientRef<TrainingJobProtocol.Command>> jobs;
  private final Function<String, RecipientRef<TrainableModelProtocol.Command>> models;
  private final RecipientRef<TrainingJobIndexProtocol.Command> index;
  private final Duration askTimeout;

  /**
   * @param index the list of jobs: a created job is added to it, {@code GET
   *     /v1/preview/training-jobs} reads it
   */
  public TrainingContext(
      ActorSystem<?> system,
      Function<String, RecipientRef<TrainingJobProtocol.Command>> jobs,
      Function<String, RecipientRef<TrainableModelProtocol.Command>> models,
      RecipientRef<TrainingJobIndexProtocol.Command> index,
      Duration askTimeout) {
    this.system = Objects.requireNonNull(system);
    this.jobs = Objects.requireNonNull(jobs);
    this.models = Objects.requireNonNull(models);
    this.index = Objects.requireNonNull(index);
    this.askTimeout = Objects.requireNonNull(askTimeout);
  }

  /**
   * Entity refs through Cluster Sharding. On a node without role {@code trainer} the job and model
   * types are started here as proxies; on a trainer node they must already be started (the node
   * starts the training entities before the gateway routes).
   */
  public static TrainingContext sharded(ActorSystem<?> system, Duration askTimeout) {
    ClusterSharding sharding = ClusterSharding.get(system);
    if (!Cluster.get(system).selfMember().hasRole(TrainingJobProtocol.ROLE)) {
      sharding.init(
          Entity.of(
                  TrainingJobProtocol.TYPE_KEY,
                  ctx -> Behaviors.<TrainingJobProtocol.Command>empty())
              .withRole(TrainingJobProtocol.ROLE));
      sharding.init(
          Entity.of(
                  TrainableModelProtocol.TYPE_KEY,
                  ctx -> Behaviors.<TrainableModelProtocol.Command>empty())
              .withRole(TrainableModelProtocol.ROLE));
      sharding.init(
          Entity.of(
                  TrainingJobIndexProtocol.TYPE_KEY,
                  ctx -> Behaviors.<TrainingJobIndexProtocol.Command>empty())
              .withRole(TrainingJobIndexProtocol.ROLE));
    }
    return new TrainingContext(
        system,
        id -> sharding.entityRefFor(TrainingJobProtocol.TYPE_KEY, id),
        id -> sharding.entityRefFor(TrainableModelProtocol.TYPE_KEY, id),
        sharding.entityRefFor(
            TrainingJobIndexProtocol.TYPE_KEY, TrainingJobIndexProtocol.ENTITY_ID),
        askTimeout);
  }

  ActorSystem<?> system() {
    return system;
  }

  <R> CompletionStage<R> askJob(
      String id,
      org.apache.pekko.japi.function.Function<ActorRef<R>, TrainingJobProtocol.Command> message) {
    return ask(jobs.apply(id), message);
  }

  <R> CompletionStage<R> askIndex(
      org.apache.pekko.japi.function.Function<ActorRef<R>, TrainingJobIndexProtocol.Command>
          message) {
    return ask(index, message);
  }

  void tellIndex(TrainingJobIndexProtocol.Command message) {
    index.tell(message);
  }

  <R> CompletionStage<R> askModel(
      String id,
      org.apache.pekko.japi.function.Function<ActorRef<R>, TrainableModelProtocol.Command>
          message) {
    return ask(models.apply(id), message);
  }

  private <T, R> CompletionStage<R> ask(
      RecipientRef<T> to, org.apache.pekko.japi.function.Function<ActorRef<R>, T> message) {
    return AskPattern.<T, R>ask(to, message, askTimeout, system.scheduler())
        .exceptionally(
            e -> {
              Throwable cause =
                  e instanceof java.util.concurrent.CompletionException && e.getCause() != null
                      ? e.getCause()
                      : e;
              if (cause instanceof TimeoutException)
                throw ApiException.overloaded(
                    "The training service did not answer in time; retry later.");
              if (cause instanceof RuntimeException re) throw re;
              throw new IllegalStateException(cause);
            });
  }
}
