package dev.troupe.gateway.replicas;

import dev.troupe.gateway.http.ApiException;
import dev.troupe.gateway.http.Stages;
import dev.troupe.protocol.cluster.GenerationRequest.Adapter;
import dev.troupe.protocol.cluster.ModelWorkerProtocol;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Command;
import dev.troupe.protocol.cluster.ServedModels;
import dev.troupe.protocol.cluster.WorkerStatus;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.RecipientRef;
import org.apache.pekko.actor.typed.javadsl.AskPattern;

/**
 * What this gateway serves and what it knows of it: the served models (a request's {@code model}
 * resolves to one, else a 404), trained checkpoints served on their base model ({@link
 * TrainedModels}), and each model's facts (its context length), asked once from a worker with
 * {@link ModelWorkerProtocol.GetStatus} and cached. Also the gateway's readiness: every served
 * model has a reachable replica with its model loaded. Which replica serves a request is the {@link
 * ReplicaSelector}'s.
 *
 * <p>Thread-safe; one per gateway, shared by all routes.
 */
public final class ModelCatalog {
  /** A status ask slower than this counts as "not reachable" for {@link #healthy()}. */
  private static final Duration READY_TIMEOUT = Duration.ofSeconds(2);

  private final List<ServedModel> models;
  private final ReplicaSelector replicas;
  private final Duration askTimeout;
  private final TrainedModels trained;
  private final Map<String, CompletableFuture<ModelFacts>> facts = new ConcurrentHashMap<>();

  /**
   * @param askTimeout how long a worker may take to answer a facts or status ask
   */
  public ModelCatalog(List<ServedModel> models, ReplicaSelector replicas, Duration askTimeout) {
    this(models, replicas, askTimeout, null);
  }

  private ModelCatalog(
      List<ServedModel> models,
      ReplicaSelector replicas,
      Duration askTimeout,
      TrainedModels trained) {
    if (models.isEmpty())
      throw new IllegalArgumentException("at least one served model is required");
    this.models = List.copyOf(models);
    this.replicas = replicas;
    this.askTimeout = askTimeout;
    this.trained = trained;
  }

  /**
   * {@code models} on the workers {@code refs} names, taken in turn and assumed reachable (no
   * cluster membership to consult): tests and embedded gateways.
   *
   * @param refs entity id ({@code model#replica}) to the worker's address
   */
  public static ModelCatalog inTurn(
      ActorSystem<?> system,
      List<ServedModel> models,
      Function<String, RecipientRef<Command>> refs,
      Duration askTimeout) {
    return new ModelCatalog(models, ReplicaSelector.inTurn(system, refs, askTimeout), askTimeout);
  }

  /** The cluster's configured {@code troupe.models}, served through {@code replicas}. */
  public static ModelCatalog of(
      ServedModels configured, ReplicaSelector replicas, Duration askTimeout) {
    long created = System.currentTimeMillis() / 1000;
    List<ServedModel> served =
        configured.models().stream()
            .map(
                m ->
                    new ServedModel(
                        m.name(),
                        m.replicas(),
                        m.path(),
                        null,
                        created,
                        m.reasoningParser(),
                        m.autoToolParser(),
                        m.aliases()))
            .toList();
    return new ModelCatalog(served, replicas, askTimeout);
  }

  /** This catalog, also serving trained models' checkpoints (resolved with {@code trained}). */
  public ModelCatalog withTrainedModels(TrainedModels trainedModels) {
    return new ModelCatalog(models, replicas, askTimeout, trainedModels);
  }

  public List<ServedModel> models() {
    return models;
  }

  /** Trained models served on top of the served ones, or null when this catalog serves none. */
  public TrainedModels trainedModels() {
    return trained;
  }

  /** How requests reach the models' replicas. */
  public ReplicaSelector replicas() {
    return replicas;
  }

  public Duration askTimeout() {
    return askTimeout;
  }

  public ActorSystem<?> system() {
    return replicas.system();
  }

  // ------------------------------------------------------------------ resolving a name

  /**
   * The model named {@code requested} (its name or an alias); absent or empty means the first
   * served model (as vLLM).
   */
  public ServedModel resolve(String requested) {
    if (requested == null || requested.isBlank()) return models.get(0);
    for (ServedModel m : models) if (m.isNamed(requested)) return m;
    throw ApiException.notFound("The model `" + requested + "` does not exist.", "model");
  }

  /**
   * What a generation's {@code model} names: a served model ({@code adapter} null), or a trained
   * model's checkpoint to run on its served base model ({@link TrainedModels}). Unknown: a 404.
   */
  public CompletionStage<Target> resolveTarget(String requested) {
    if (requested == null || requested.isBlank() || trained == null)
      return CompletableFuture.completedFuture(new Target(resolve(requested), null));
    for (ServedModel m : models)
      if (m.isNamed(requested)) return CompletableFuture.completedFuture(new Target(m, null));
    return trained
        .resolve(requested)
        .thenApply(
            r -> {
              for (ServedModel m : models)
                if (m.name().equals(r.baseModel())) return new Target(m, r.adapter());
              throw ApiException.notFound(
                  "The model `"
                      + requested
                      + "` is trained on base model `"
                      + r.baseModel()
                      + "`, which this cluster does not serve.",
                  "model");
            });
  }

  /**
   * A generation's model.
   *
   * @param model the served (base) model whose workers run it
   * @param adapter the trained checkpoint to run, or null for the base model itself
   */
  public record Target(ServedModel model, Adapter adapter) {}

  // ------------------------------------------------------------------ facts

  /** The model's facts, asked once from a worker; a failed ask is retried by the next caller. */
  public CompletionStage<ModelFacts> facts(ServedModel model) {
    CompletableFuture<ModelFacts> cached = facts.get(model.name());
    if (cached != null && !cached.isCompletedExceptionally())
      return cached.copy(); // callers cannot complete the cache
    CompletableFuture<ModelFacts> asked;
    try {
      asked = askFacts(model);
    } catch (ApiException noneReachable) {
      return CompletableFuture.failedFuture(noneReachable);
    }
    facts.put(model.name(), asked);
    return asked.exceptionallyCompose(
        e -> {
          facts.remove(model.name(), asked);
          Throwable cause =
              e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
          if (cause instanceof ApiException api) return CompletableFuture.failedFuture(api);
          return CompletableFuture.failedFuture(
              ApiException.overloaded(
                  "No worker of model `"
                      + model.name()
                      + "` answered within "
                      + askTimeout.toSeconds()
                      + "s; retry later."));
        });
  }

  private CompletableFuture<ModelFacts> askFacts(ServedModel model) {
    return Stages.on(
            system(),
            AskPattern.<Command, WorkerStatus>ask(
                replicas.any(model),
                ModelWorkerProtocol.GetStatus::new,
                askTimeout,
                system().scheduler()))
        .thenApply(
            s -> {
              // A replica that could not load its model reports a context length of 0.
              if (s.maxModelLen() < 1)
                throw ApiException.overloaded(
                    "Model `"
                        + model.name()
                        + "` cannot serve right now (its worker failed to load it).");
              return new ModelFacts(
                  model.name(),
                  s.maxModelLen(),
                  false,
                  model.reasoningParser(),
                  model.autoToolParser());
            })
        .toCompletableFuture();
  }

  /** Facts already known for {@code model}, without asking; null if not yet known. */
  public ModelFacts knownFacts(ServedModel model) {
    CompletableFuture<ModelFacts> f = facts.get(model.name());
    return f != null && f.isDone() && !f.isCompletedExceptionally() ? f.join() : null;
  }

  // ------------------------------------------------------------------ readiness

  /**
   * True while every served model has a replica that can take a request now ({@code GET /health},
   * the gateway's readiness): {@link #ready(Duration)} within the ask timeout, at most 2 s.
   */
  public CompletionStage<Boolean> healthy() {
    return ready(askTimeout.compareTo(READY_TIMEOUT) < 0 ? askTimeout : READY_TIMEOUT);
  }

  /**
   * True when, for every served model, at least one replica this gateway can reach (not on an
   * unreachable or downed node) answers a status ask within {@code timeout} with its model loaded.
   * Asked anew on every call: a replica that stops, is cut off, or drains (it no longer answers)
   * makes its model unready at once when it was the last one.
   */
  public CompletionStage<Boolean> ready(Duration timeout) {
    List<CompletableFuture<Boolean>> perModel = new ArrayList<>(models.size());
    for (ServedModel m : models) perModel.add(anyLoaded(m, timeout));
    return CompletableFuture.allOf(perModel.toArray(CompletableFuture[]::new))
        .thenApply(ok -> perModel.stream().allMatch(CompletableFuture::join));
  }

  /** True once one of {@code model}'s reachable replicas says its model is loaded. */
  private CompletableFuture<Boolean> anyLoaded(ServedModel model, Duration timeout) {
    List<Integer> reachable = replicas.reachable(model);
    if (reachable.isEmpty()) return CompletableFuture.completedFuture(false);
    CompletableFuture<Boolean> any = new CompletableFuture<>();
    AtomicInteger left = new AtomicInteger(reachable.size());
    for (int i : reachable)
      Stages.on(
              system(),
              AskPattern.<Command, WorkerStatus>ask(
                  replicas.replica(model, i).ref(),
                  ModelWorkerProtocol.GetStatus::new,
                  timeout,
                  system().scheduler()))
          .whenComplete(
              (status, error) -> {
                if (error == null && status.maxModelLen() > 0) any.complete(true);
                else if (left.decrementAndGet() == 0) any.complete(false);
              });
    return any;
  }
}
