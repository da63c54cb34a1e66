package dev.troupe.gateway.workers;

import dev.troupe.gateway.chat.MigrationSettings;
import dev.troupe.gateway.chat.ModelFacts;
import dev.troupe.gateway.chat.ReplicaPicker;
import dev.troupe.gateway.chat.Replicas;
import dev.troupe.gateway.http.ApiException;
import dev.troupe.gateway.liveness.ReplicaLiveness;
import dev.troupe.gateway.routing.PromptTokenizer;
import dev.troupe.gateway.routing.ReplicaRouter;
import dev.troupe.gateway.routing.ReplicaView;
import dev.troupe.gateway.routing.RoundRobinRouting;
import dev.troupe.gateway.routing.RouteDecision;
import dev.troupe.gateway.routing.RouteRecorder;
import dev.troupe.gateway.routing.RoutingSettings;
import dev.troupe.gateway.routing.RoutingTable;
import dev.troupe.protocol.cluster.GenerationRequest;
import dev.troupe.protocol.cluster.ModelWorkerProtocol;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Command;
import dev.troupe.protocol.cluster.ServedModels;
import dev.troupe.protocol.cluster.WorkerStatus;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.stream.IntStream;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.RecipientRef;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;

/**
 * The gateway's view of the served models and how to reach their workers: resolves a request's
 * {@code model} (404 if unknown), picks a replica, and knows each model's facts (name, context
 * length), asked once from a worker with {@link ModelWorkerProtocol.GetStatus} and cached.
 *
 * <p>Every replica choice first keeps only the replicas {@link ReplicaLiveness} says are reachable
 * (a replica on an unreachable node gets nothing, so new requests during an outage go to live
 * replicas at once; with none, a 503 at once). Among those, a generation's replica is chosen by the
 * {@link ReplicaRouter} ({@link #route}): by cached prefix and load when the gateway runs
 * cache-aware routing, else round-robin. A generation whose worker is lost continues on a replica
 * taken in turn ({@link #replicas}); other asks (the tokenizer endpoints, facts) also take replicas
 * in turn ({@link #pick}).
 *
 * <p>Thread-safe; shared by all routes.
 */
public final class ModelDirectory {
  private final ActorSystem<?> system;
  private final List<ServedModel> models;
  private final Function<String, RecipientRef<Command>> refs;
  private final Duration askTimeout;
  private final Map<String, CompletableFuture<ModelFacts>> facts = new ConcurrentHashMap<>();
  private final Map<String, AtomicInteger> nextReplica = new ConcurrentHashMap<>();
  private final Set<String> probing = ConcurrentHashMap.newKeySet();
  private final TrainedModels trained;
  private final ReplicaRouter router;
  private final ReplicaLiveness liveness;
  private final MigrationSettings migration;

  /**
   * Round-robin routing, workers assumed reachable (no cluster membership to consult), requests not
   * migrated: tests and embedded gateways.
   *
   * @param refs entity id ({@code model#replica}) to the worker's address
   */
  public ModelDirectory(
      ActorSystem<?> system,
      List<ServedModel> models,
      Function<String, RecipientRef<Command>> refs,
      Duration askTimeout) {
    this(
        system,
        models,
        refs,
        askTimeout,
        null,
        roundRobin(),
        ReplicaLiveness.assumeAllLive(),
        MigrationSettings.DISABLED);
  }

  private static ReplicaRouter roundRobin() {
    RoutingSettings settings = RoutingSettings.DEFAULTS.withCacheAware(false);
    return new ReplicaRouter(
        new RoutingTable(),
        new RoundRobinRouting(),
        settings,
        RouteRecorder.NONE,
        PromptTokenizer.NONE);
  }

  private ModelDirectory(
      ActorSystem<?> system,
      List<ServedModel> models,
      Function<String, RecipientRef<Command>> refs,
      Duration askTimeout,
      TrainedModels trained,
      ReplicaRouter router,
      ReplicaLiveness liveness,
      MigrationSettings migration) {
    if (models.isEmpty())
      throw new IllegalArgumentException("at least one served model is required");
    this.system = system;
    this.models = List.copyOf(models);
    this.refs = refs;
    this.askTimeout = askTimeout;
    this.trained = trained;
    this.router = router;
    this.liveness = liveness;
    this.migration = migration;
  }

  /** Trained models served on top of the served ones, or null when this directory serves none. */
  public TrainedModels trainedModels() {
    return trained;
  }

  /** This directory, also serving trained models' checkpoints (resolved with {@code trained}). */
  public ModelDirectory withTrainedModels(TrainedModels trainedModels) {
    return new ModelDirectory(
        system, models, refs, askTimeout, trainedModels, router, liveness, migration);
  }

  /** This directory, choosing generations' replicas with {@code replicaRouter}. */
  public ModelDirectory withRouter(ReplicaRouter replicaRouter) {
    return new ModelDirectory(
        system, models, refs, askTimeout, trained, replicaRouter, liveness, migration);
  }

  /**
   * This directory, choosing only replicas {@code replicaLiveness} says are reachable and moving
   * requests whose worker is lost as {@code settings} say.
   */
  public ModelDirectory withLiveness(ReplicaLiveness replicaLiveness, MigrationSettings settings) {
    return new ModelDirectory(
        system, models, refs, askTimeout, trained, router, replicaLiveness, settings);
  }

  /** Which replicas are reachable: the filter before any replica choice. */
  public ReplicaLiveness liveness() {
    return liveness;
  }

  /** How generations' replicas are chosen. */
  public ReplicaRouter router() {
    return router;
  }

  /**
   * Where a generation goes: the replica of {@code model} the router chooses among its reachable
   * replicas, and the request to send it (carrying the prompt's token ids when the gateway computed
   * them). Close {@link Destination#lease()} when the generation ends, however it ends. Fails with
   * a 503 at once when no replica is reachable.
   *
   * @param maxModelLen the model's context length (its facts)
   */
  public CompletionStage<Destination> route(
      ServedModel model, GenerationRequest request, int maxModelLen) {
    List<Integer> candidates = liveness.candidates(model.name(), model.replicas());
    probeRestarting(model);
    if (candidates.isEmpty()) return CompletableFuture.failedFuture(noneReachable(model));
    return router
        .route(model.name(), candidates, request, maxModelLen)
        .thenApply(
            routed -> {
              int[] ids = routed.promptTokenIds();
              GenerationRequest sent =
                  ids == null
                      ? request
                      : request.withPromptTokenIds(IntStream.of(ids).boxed().toList());
              int replica = routed.decision().replica();
              return new Destination(
                  ModelWorkerProtocol.entityId(model.name(), replica),
                  replica(model, replica),
                  sent,
                  routed.decision(),
                  routed.lease());
            });
  }

  /**
   * A generation's replica and why it was chosen.
   *
   * @param entityId the chosen replica's entity id ({@code model#replica})
   * @param worker the chosen replica
   * @param request what to send it
   * @param decision the routing decision (replica index, reason, expected cached tokens)
   * @param lease the request's place in the replica's in-flight count, until closed
   */
  public record Destination(
      String entityId,
      RecipientRef<Command> worker,
      GenerationRequest request,
      RouteDecision decision,
      ReplicaView.Lease lease) {}

  /**
   * Workers reached through Cluster Sharding, chosen among the replicas this node's cluster view
   * says are reachable, requests migrated as {@code migration} says; round-robin until {@link
   * #withRouter}. The {@link ModelWorkerProtocol#TYPE_KEY} entity must be initialized on this node
   * (as host on worker nodes, as proxy on gateway-only nodes) before use.
   */
  public static ModelDirectory sharded(
      ActorSystem<?> system,
      List<ServedModel> models,
      Duration askTimeout,
      MigrationSettings migration) {
    ClusterSharding sharding = ClusterSharding.get(system);
    return new ModelDirectory(
        system,
        models,
        id -> sharding.entityRefFor(ModelWorkerProtocol.TYPE_KEY, id),
        askTimeout,
        null,
        roundRobin(),
        ReplicaLiveness.start(system),
        migration);
  }

  /**
   * Workers reached through Cluster Sharding, for the cluster's configured {@code troupe.models}.
   */
  public static ModelDirectory sharded(
      ActorSystem<?> system,
      ServedModels configured,
      Duration askTimeout,
      MigrationSettings migration) {
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
                        m.autoToolParser()))
            .toList();
    return sharded(system, served, askTimeout, migration);
  }

  public List<ServedModel> models() {
    return models;
  }

  public Duration askTimeout() {
    return askTimeout;
  }

  public ActorSystem<?> system() {
    return system;
  }

  /** The model named {@code requested}; absent or empty means the first served model (as vLLM). */
  public ServedModel resolve(String requested) {
    if (requested == null || requested.isBlank()) return models.get(0);
    for (ServedModel m : models) if (m.name().equals(requested)) return m;
    throw ApiException.notFound("The model `" + requested + "` does not exist.", "model");
  }

  /**
   * What a chat request's {@code model} names: a served model ({@code adapter} null), or a trained
   * model's checkpoint to run on its served base model ({@link TrainedModels}). Unknown: a 404.
   */
  public CompletionStage<ChatTarget> resolveChat(String requested) {
    if (requested == null || requested.isBlank() || trained == null)
      return CompletableFuture.completedFuture(new ChatTarget(resolve(requested), null));
    for (ServedModel m : models)
      if (m.name().equals(requested))
        return CompletableFuture.completedFuture(new ChatTarget(m, null));
    return trained
        .resolve(requested)
        .thenApply(
            r -> {
              for (ServedModel m : models)
                if (m.name().equals(r.baseModel())) return new ChatTarget(m, r.adapter());
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
   * A chat request's destination.
   *
   * @param model the served (base) model whose workers run it
   * @param adapter the trained checkpoint to run, or null for the base model itself
   */
  public record ChatTarget(
      ServedModel model, dev.troupe.protocol.cluster.GenerationRequest.Adapter adapter) {}

  /**
   * The next reachable replica of {@code model} to send work to, in turn.
   *
   * @throws ApiException 503 when no replica of the model is reachable
   */
  public RecipientRef<Command> pick(ServedModel model) {
    return pick(model, Set.of()).orElseThrow(() -> noneReachable(model)).ref();
  }

  private static ApiException noneReachable(ServedModel model) {
    return ApiException.overloaded(
        "No replica of model `" + model.name() + "` is reachable right now; retry later.");
  }

  /**
   * A reachable replica of {@code model} in turn: one not in {@code avoid} when there is one, and
   * within that preference a live or unknown replica before a restarting one ({@link
   * ReplicaLiveness#tiers}); empty when none is reachable.
   */
  public Optional<ReplicaPicker.Replica> pick(ServedModel model, Set<String> avoid) {
    List<List<Integer>> tiers = liveness.tiers(model.name(), model.replicas());
    probeRestarting(model);
    if (tiers.isEmpty()) return Optional.empty();
    List<Integer> from = null;
    for (List<Integer> tier : tiers) {
      List<Integer> preferred = new ArrayList<>(tier.size());
      for (int i : tier)
        if (!avoid.contains(ModelWorkerProtocol.entityId(model.name(), i))) preferred.add(i);
      if (!preferred.isEmpty()) {
        from = preferred;
        break;
      }
    }
    if (from == null) from = new ArrayList<>(tiers.get(0)); // all avoided: the best tier
    from.sort(null); // turns go round the replica indices, whatever their liveness order
    int turn =
        nextReplica.computeIfAbsent(model.name(), k -> new AtomicInteger()).getAndIncrement();
    int replica = from.get(Math.floorMod(turn, from.size()));
    String id = ModelWorkerProtocol.entityId(model.name(), replica);
    return Optional.of(new ReplicaPicker.Replica(id, refs.apply(id)));
  }

  /**
   * Asks each restarting replica of {@code model} for its status (one ask in flight per replica):
   * the answer comes once it runs again (sharding holds the ask until then), and makes it a
   * candidate again although no request was sent to it meanwhile.
   */
  private void probeRestarting(ServedModel model) {
    for (String id : liveness.restarting(model.name(), model.replicas())) {
      if (!probing.add(id)) continue;
      AskPattern.<Command, WorkerStatus>ask(
              refs.apply(id), ModelWorkerProtocol.GetStatus::new, askTimeout, system.scheduler())
          .whenComplete(
              (status, failure) -> {
                probing.remove(id);
                if (failure == null) liveness.confirmed(id);
              });
    }
  }

  /**
   * How a generation on {@code model} reaches, watches and replaces its workers: its first attempt
   * goes to {@code first} (the router's choice), a continuation after a lost worker to a reachable
   * replica in turn, preferring ones the request has not lost. (Continuations are not routed by
   * cache: the router's choice was for the original prompt, and a lost worker's replica is gone.)
   */
  public Replicas replicas(ServedModel model, Destination first) {
    AtomicBoolean firstTaken = new AtomicBoolean();
    ReplicaPicker picker =
        new ReplicaPicker() {
          @Override
          public String model() {
            return model.name();
          }

          @Override
          public Optional<Replica> pick(Set<String> avoid) {
            if (!firstTaken.getAndSet(true) && !avoid.contains(first.entityId()))
              return Optional.of(new Replica(first.entityId(), first.worker()));
            return ModelDirectory.this.pick(model, avoid);
          }
        };
    return new Replicas(system, picker, liveness, askTimeout, migration);
  }

  /** Replica {@code replica} of {@code model}. */
  public RecipientRef<Command> replica(ServedModel model, int replica) {
    return refs.apply(ModelWorkerProtocol.entityId(model.name(), replica));
  }

  /** The model's facts, asked once from a worker; a failed ask is retried by the next caller. */
  public CompletionStage<ModelFacts> facts(ServedModel model) {
    CompletableFuture<ModelFacts> cached = facts.get(model.name());
    if (cached != null && !cached.isCompletedExceptionally())
      return cached.copy(); // callers cannot complete the cache
    CompletableFuture<ModelFacts> asked =
        AskPattern.<Command, WorkerStatus>ask(
                pick(model), ModelWorkerProtocol.GetStatus::new, askTimeout, system.scheduler())
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
    facts.put(model.name(), asked);
    return asked.exceptionallyCompose(
        e -> {
          facts.remove(model.name(), asked);
          Throwable cause =
              e instanceof java.util.concurrent.CompletionException && e.getCause() != null
                  ? e.getCause()
                  : e;
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

  /** A status ask slower than this counts as "not reachable" for {@link #healthy()}. */
  private static final Duration READY_TIMEOUT = Duration.ofSeconds(2);

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
    List<Integer> reachable = new ArrayList<>();
    for (List<Integer> tier : liveness.tiers(model.name(), model.replicas()))
      reachable.addAll(tier);
    if (reachable.isEmpty()) return CompletableFuture.completedFuture(false);
    CompletableFuture<Boolean> any = new CompletableFuture<>();
    java.util.concurrent.atomic.AtomicInteger left =
        new java.util.concurrent.atomic.AtomicInteger(reachable.size());
    for (int i : reachable)
      AskPattern.<Command, WorkerStatus>ask(
              replica(model, i), ModelWorkerProtocol.GetStatus::new, timeout, system.scheduler())
          .whenComplete(
              (status, error) -> {
                if (error == null && status.maxModelLen() > 0) any.complete(true);
                else if (left.decrementAndGet() == 0) any.complete(false);
              });
    return any;
  }

  /** Facts already known for {@code model}, without asking; null if not yet known. */
  public ModelFacts knownFacts(ServedModel model) {
    CompletableFuture<ModelFacts> f = facts.get(model.name());
    return f != null && f.isDone() && !f.isCompletedExceptionally() ? f.join() : null;
  }
}
