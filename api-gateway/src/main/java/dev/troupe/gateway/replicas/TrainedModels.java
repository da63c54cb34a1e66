package dev.troupe.gateway.replicas;

import dev.troupe.gateway.http.ApiException;
import dev.troupe.gateway.http.Stages;
import dev.troupe.protocol.cluster.GenerationRequest.Adapter;
import dev.troupe.protocol.cluster.TrainableModelProtocol;
import dev.troupe.protocol.cluster.TrainableModelProtocol.Checkpoint;
import dev.troupe.protocol.cluster.TrainableModelProtocol.CheckpointPage;
import dev.troupe.protocol.cluster.TrainableModelProtocol.CheckpointsReply;
import dev.troupe.protocol.cluster.TrainableModelProtocol.ModelFound;
import dev.troupe.protocol.cluster.TrainableModelProtocol.ModelInfo;
import dev.troupe.protocol.cluster.TrainableModelProtocol.ModelPage;
import dev.troupe.protocol.cluster.TrainableModelProtocol.ModelReply;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.RecipientRef;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;

/**
 * Resolves a chat {@code model} that names a trained model to its base model and checkpoint: {@code
 * <model id>} (the latest step), {@code <model id>:step<N>}, {@code <entity>/<project>/<name>} or
 * {@code <entity>/<project>/<name>:step<N>}. Asks the {@code TrainableModel} entity (and, for a
 * name, the {@code ModelRegistry}) within the ask timeout; an unknown model or step is a 404 naming
 * {@code model}, a registry that does not answer a 503.
 *
 * <p>Thread-safe; nothing is cached (a checkpoint added a moment ago is served at once).
 */
public final class TrainedModels {
  private static final Pattern STEP = Pattern.compile("^(.+):step(\\d{1,18})$");

  /** Page size when scanning the registry for a name or a model's checkpoints for a step. */
  private static final int PAGE = 100;

  private final ActorSystem<?> system;
  private final Supplier<RecipientRef<TrainableModelProtocol.RegistryCommand>> registry;
  private final Function<String, RecipientRef<TrainableModelProtocol.Command>> models;
  private final Duration askTimeout;

  public TrainedModels(
      ActorSystem<?> system,
      Supplier<RecipientRef<TrainableModelProtocol.RegistryCommand>> registry,
      Function<String, RecipientRef<TrainableModelProtocol.Command>> models,
      Duration askTimeout) {
    this.system = system;
    this.registry = registry;
    this.models = models;
    this.askTimeout = askTimeout;
  }

  /**
   * Through Cluster Sharding. The entity types must be started on this node (as hosts on trainer
   * nodes, as proxies elsewhere: {@code PreviewContext.sharded} does it) before the first request.
   */
  public static TrainedModels sharded(ActorSystem<?> system, Duration askTimeout) {
    ClusterSharding sharding = ClusterSharding.get(system);
    return new TrainedModels(
        system,
        () ->
            sharding.entityRefFor(
                TrainableModelProtocol.REGISTRY_TYPE_KEY,
                TrainableModelProtocol.REGISTRY_ENTITY_ID),
        id -> sharding.entityRefFor(TrainableModelProtocol.TYPE_KEY, id),
        askTimeout);
  }

  /** A trained model's checkpoint: where to run it and what to run. */
  public record Resolved(String baseModel, Adapter adapter) {}

  /** Resolves {@code requested}; fails with a 404 {@link ApiException} naming {@code model}. */
  public CompletionStage<Resolved> resolve(String requested) {
    Matcher m = STEP.matcher(requested);
    String name = m.matches() ? m.group(1) : requested;
    Long step = m.matches() ? Long.valueOf(m.group(2)) : null;
    CompletionStage<String> id =
        name.contains("/") ? idOfName(requested, name) : CompletableFuture.completedFuture(name);
    return id.thenCompose(
            modelId -> this.<ModelReply>askModel(modelId, TrainableModelProtocol.Get::new))
        .thenCompose(
            reply -> {
              if (!(reply instanceof ModelFound found)) throw notFound(requested);
              Checkpoint latest = found.latest();
              if (step == null || step == latest.step())
                return CompletableFuture.completedFuture(resolved(requested, found.info(), latest));
              return findStep(requested, found.info(), step, null);
            })
        .exceptionallyCompose(e -> CompletableFuture.failedFuture(apiError(e)));
  }

  private static Resolved resolved(String requested, ModelInfo info, Checkpoint cp) {
    if (cp.step() > 0 && (cp.artifact() == null || cp.artifact().isBlank()))
      throw ApiException.notFound(
          "The model `" + requested + "` has no stored adapter for step " + cp.step() + ".",
          "model");
    return new Resolved(
        info.baseModel(), new Adapter(info.id(), cp.step(), cp.step() == 0 ? null : cp.artifact()));
  }

  /** Pages through the checkpoints, newest first, until {@code step} or an older one. */
  private CompletionStage<Resolved> findStep(
      String requested, ModelInfo info, long step, String after) {
    return this.<CheckpointsReply>askModel(
            info.id(), r -> new TrainableModelProtocol.ListCheckpoints(after, PAGE, true, r))
        .thenCompose(
            reply -> {
              if (!(reply instanceof CheckpointPage page)) throw notFound(requested);
              for (Checkpoint c : page.data()) {
                if (c.step() == step)
                  return CompletableFuture.completedFuture(resolved(requested, info, c));
                if (c.step() < step) throw notFound(requested);
              }
              if (!page.hasMore() || page.data().isEmpty()) throw notFound(requested);
              return findStep(requested, info, step, page.data().get(page.data().size() - 1).id());
            });
  }

  /** The id of the model named {@code entity/project/name}, scanning the registry's list. */
  private CompletionStage<String> idOfName(String requested, String name) {
    String[] parts = name.split("/", -1);
    if (parts.length != 3) return CompletableFuture.failedFuture(notFound(requested));
    return scan(requested, parts, null);
  }

  private CompletionStage<String> scan(String requested, String[] parts, String after) {
    return listPage(after)
        .thenCompose(
            page -> {
              for (ModelInfo info : page.data())
                if (info.entity().equals(parts[0])
                    && info.project().equals(parts[1])
                    && info.name().equals(parts[2]))
                  return CompletableFuture.completedFuture(info.id());
              if (!page.hasMore() || page.data().isEmpty()) throw notFound(requested);
              return scan(requested, parts, page.data().get(page.data().size() - 1).id());
            });
  }

  /**
   * The trainable model with this id, as {@code GET /v1/models} lists it; a 404 naming {@code
   * model} when there is none (an id that is not a UUID never is).
   */
  public CompletionStage<ModelInfo> info(String id) {
    try {
      java.util.UUID.fromString(id);
    } catch (IllegalArgumentException notUuid) {
      return CompletableFuture.failedFuture(notFound(id));
    }
    return this.<ModelReply>askModel(id, TrainableModelProtocol.Get::new)
        .thenApply(
            reply -> {
              if (!(reply instanceof ModelFound found)) throw notFound(id);
              return found.info();
            })
        .exceptionallyCompose(e -> CompletableFuture.failedFuture(apiError(e)));
  }

  /**
   * Registered trainable models in creation order, at most {@code limit} (for {@code GET
   * /v1/models}); one registry page per 100.
   */
  public CompletionStage<java.util.List<ModelInfo>> list(int limit) {
    return listFrom(null, limit, new java.util.ArrayList<>());
  }

  private CompletionStage<java.util.List<ModelInfo>> listFrom(
      String after, int limit, java.util.List<ModelInfo> into) {
    return listPage(after)
        .thenCompose(
            page -> {
              for (ModelInfo info : page.data()) if (into.size() < limit) into.add(info);
              if (!page.hasMore() || page.data().isEmpty() || into.size() >= limit)
                return CompletableFuture.completedFuture(into);
              return listFrom(page.data().get(page.data().size() - 1).id(), limit, into);
            });
  }

  private CompletionStage<ModelPage> listPage(String after) {
    return Stages.on(
        system,
        AskPattern.<TrainableModelProtocol.RegistryCommand, ModelPage>ask(
            registry.get(),
            r -> new TrainableModelProtocol.ListModels(after, PAGE, r),
            askTimeout,
            system.scheduler()));
  }

  private <R> CompletionStage<R> askModel(
      String id,
      org.apache.pekko.japi.function.Function<ActorRef<R>, TrainableModelProtocol.Command>
          message) {
    return Stages.on(
        system, AskPattern.ask(models.apply(id), message, askTimeout, system.scheduler()));
  }

  static ApiException notFound(String requested) {
    return ApiException.notFound("The model `" + requested + "` does not exist.", "model");
  }

  private ApiException apiError(Throwable e) {
    Throwable cause = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
    if (cause instanceof ApiException api) return api;
    return ApiException.overloaded(
        "The model registry did not answer within " + askTimeout.toSeconds() + "s; retry later.");
  }
}
