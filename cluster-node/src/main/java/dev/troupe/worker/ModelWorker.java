package dev.troupe.worker;

import dev.troupe.adapters.CheckpointStore;
import dev.troupe.adapters.TrainedAdapters;
import dev.troupe.engine.LoraAdapter;
import dev.troupe.engine.core.EngineRequest;
import dev.troupe.engine.core.Rejection;
import dev.troupe.engine.cuda.CudaModelRunner;
import dev.troupe.engine.input.InputProcessor;
import dev.troupe.engine.output.RequestUpdate;
import dev.troupe.engine.serving.Engine;
import dev.troupe.protocol.cluster.ClusterViewProtocol;
import dev.troupe.protocol.cluster.GenerationRequest.Adapter;
import dev.troupe.protocol.cluster.KvHandle;
import dev.troupe.protocol.cluster.KvRole;
import dev.troupe.protocol.cluster.ModelWorkerProtocol;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Accepted;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Cancel;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Command;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Describe;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Detokenize;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.ErrorKind;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Failed;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Generate;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationEvent;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationUpdate;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GetStatus;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Migrate;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.ReplicaId;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Tokenize;
import dev.troupe.protocol.cluster.ServedModels;
import dev.troupe.protocol.cluster.ServedModels.ServedModel;
import dev.troupe.protocol.cluster.TrainingJobProtocol.AdapterCheckpoint;
import dev.troupe.protocol.cluster.WorkerStatus;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import org.apache.pekko.actor.NoSerializationVerificationNeeded;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.PreRestart;
import org.apache.pekko.actor.typed.SupervisorStrategy;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;
import org.apache.pekko.cluster.sharding.typed.ClusterShardingSettings;
import org.apache.pekko.cluster.sharding.typed.HashCodeMessageExtractor;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.sharding.typed.javadsl.Entity;

/**
 * One replica of one model: the sharded entity {@code <model>#<replica>} ({@link
 * ModelWorkerProtocol#TYPE_KEY}) on a node with role {@code worker}, owning an {@link Engine}.
 *
 * <p>A {@link Generate} is first prepared by the engine's input processor on the replica's bounded
 * input executor (render, tokenize, every model-aware check; never on this thread), then queued in
 * the engine core. The worker runs one engine step per message: while work remains it sends itself
 * {@code Step}, so requests that arrive (or are cancelled) in the meantime join (or leave) between
 * two steps — continuous batching. Each step sends every request with news one {@link
 * ModelWorkerProtocol.GenerationUpdate}. Backpressure: a full input queue or engine waiting queue
 * is answered with {@link Failed} {@code OVERLOADED} at once. Each requester is watched; when it
 * stops (the client went away) its requests are cancelled and their KV blocks freed before the next
 * step.
 *
 * <p>Trained checkpoints are served as LoRA adapters over the base model ({@link AdapterSlots}): a
 * {@link Generate} naming an {@link Adapter} runs every chunk with that adapter, so a request ends
 * on the checkpoint it started with while newer ones are registered between two steps. An adapter
 * is taken from memory when this node's trainer produced it ({@link TrainedAdapters}), else read
 * from its checkpoint directory off this thread — when the trainer announces it ({@link
 * AdapterCheckpoint}) or, lazily, when a request names one this replica does not hold (after a
 * restart or a move to another node); requests naming it wait for it, others keep running.
 *
 * <p>Isolation: what fails on one request's data fails only that request (the engine reports it);
 * an exception escaping a step is a bug or a broken engine and restarts the entity. A replica that
 * stops ({@link HandOff} when its shard moves, a node shutting down) hands its requests back with
 * {@link Migrate}: the gateway resumes them on another replica.
 *
 * <p>Thread: the pinned dispatcher {@code troupe.worker.dispatcher} (the CPU runner is confined to
 * one thread). Nothing survives a restart: in-flight requests are failed, the model is reloaded;
 * remember-entities brings the replica back on another node when its node leaves.
 */
public final class ModelWorker extends AbstractBehavior<Command> {

  /** Runs the next engine step. */
  private enum Step implements Command, NoSerializationVerificationNeeded {
    INSTANCE
  }

  /** Logs the engine metrics. */
  private enum LogMetrics implements Command, NoSerializationVerificationNeeded {
    INSTANCE
  }

  /** The input processor finished with a request (off this thread): prepared, or refused. */
  private record InputDone(
      Generate generate,
      CompletableFuture<EngineRequest> result,
      EngineRequest prepared,
      Throwable error)
      implements Command, NoSerializationVerificationNeeded {}

  /** An adapter was read from its checkpoint directory (off the worker's thread), or failed to. */
  private record AdapterLoaded(String name, LoraAdapter adapter, Throwable error)
      implements Command, NoSerializationVerificationNeeded {}

  /** Work for the runner between two engine steps (a training step on the serving GPU). */
  private record OnEngine(GpuReplicas.Task task)
      implements Command, NoSerializationVerificationNeeded {}

  /** A watched requester stopped. */
  private record RequesterGone(ActorRef<GenerationEvent> requester)
      implements Command, NoSerializationVerificationNeeded {}

  /** A prepared request waiting for its adapter to be read. */
  private record AwaitingAdapter(String id, EngineRequest request, Adapter adapter) {}

  /** Config path of the dispatcher replicas run on: one pinned thread each. */
  public static final String DISPATCHER = "troupe.worker.dispatcher";

  /** Adapters registered at once by default; a LoRA r 8 adapter of a 1B model is ~20 MB. */
  static final int DEFAULT_MAX_ADAPTERS = 8;

  private final String entityId;
  private final Engine engine;
  private final Requesters requesters;
  private boolean stepScheduled;
  private final AdapterSlots adapters;

  /** Adapters being read, with the prepared requests waiting for them. */
  private final Map<String, List<AwaitingAdapter>> loading = new HashMap<>();

  private final Executor loadExecutor;
  private final LargeUpdates largeUpdates;
  private final ReplyBound replyBound;

  /** Adapters this node's trainer produced, taken from memory instead of their directory. */
  private final TrainedAdapters trainedHere;

  private final ThreadPoolExecutor inputExecutor;
  private final Preparations preparations;
  private final ActorRef<CacheReporter.Command> cacheReports;
  private final WorkerHealth health;

  /** Prompt and generated tokens per second over the last minute, for the cluster view. */
  private final TokenRates rates = new TokenRates(System.nanoTime());

  /** This node's cluster address, {@code host:port}: where the cluster view places the replica. */
  private final String node;

  /** What the gateways may send it: prefill legs, decode legs and whole requests, or both. */
  private final KvRole kvRole;

  /** Where the model runs (read once: a GPU's memory query is a driver call). */
  private final dev.troupe.engine.DeviceInfo device;

  /** Set by {@link Drain}: new requests migrate at once; these wait for the last one to end. */
  private boolean draining;

  private final List<ActorRef<Drain.Drained>> drainWaiters = new ArrayList<>();

  /** This replica's runner as reachable for training, when it serves on a GPU; else null. */
  private final GpuReplicas.Replica onGpu;

  private final CudaModelRunner gpuRunner;

  /** Disaggregated prefill/decode: leases served to decode replicas, pulls from prefill ones. */
  private final KvTransfers kv;

  /**
   * Starts {@code ModelWorker} sharding on this node: hosts on role {@code worker}, a proxy
   * elsewhere (gateway-only nodes). Replicas are remembered, run on their own pinned thread and
   * stop with {@link HandOff}, so on a hand-off their requests migrate instead of being aborted.
   */
  public static void init(
      ActorSystem<?> system,
      ServedModels models,
      EngineProvider engines,
      Duration metricsLogInterval) {
    ClusterSharding sharding = ClusterSharding.get(system);
    ClusterShardingSettings settings =
        ClusterShardingSettings.create(system).withRememberEntities(true);
    sharding.init(
        Entity.of(
                ModelWorkerProtocol.TYPE_KEY,
                entity -> create(entity.getEntityId(), models, engines, metricsLogInterval))
            .withRole(ModelWorkerProtocol.ROLE)
            .withStopMessage(HandOff.INSTANCE)
            .withSettings(settings)
            .withAllocationStrategy(
                new KvRolePlacement(
                    sharding.defaultShardAllocationStrategy(settings),
                    models,
                    // the entity's extractor (sharding's default): shard id = hash of entity id
                    new HashCodeMessageExtractor<Command>(settings.numberOfShards())))
            .withEntityProps(DispatcherSelector.fromConfig(DISPATCHER)));
  }

  /**
   * The entity behaviour: loads the replica's model, then serves it. A model that is not configured
   * or fails to load gives a worker that refuses every request with the reason.
   */
  public static Behavior<Command> create(
      String entityId, ServedModels models, EngineProvider engines, Duration metricsLogInterval) {
    return create(entityId, models, engines, metricsLogInterval, -1);
  }

  /**
   * @param maxAdapters LoRA adapters kept registered at once; below 1 = {@code
   *     troupe.worker.max-adapters} (default {@value #DEFAULT_MAX_ADAPTERS})
   */
  public static Behavior<Command> create(
      String entityId,
      ServedModels models,
      EngineProvider engines,
      Duration metricsLogInterval,
      int maxAdapters) {
    Behavior<Command> worker =
        Behaviors.setup(
            ctx ->
                Behaviors.withTimers(
                    timers -> {
                      ReplicaId replica = ModelWorkerProtocol.parseEntityId(entityId);
                      WorkerHealth health = WorkerHealth.get(ctx.getSystem());
                      health.loading(entityId);
                      Optional<ServedModel> model = models.find(replica.model());
                      if (model.isEmpty()) {
                        String why = "The model `" + replica.model() + "` does not exist.";
                        health.failed(entityId, why);
                        return UnavailableWorker.create(entityId, ErrorKind.NOT_FOUND, why);
                      }
                      Engine engine;
                      try {
                        long start = System.nanoTime();
                        engine = engines.open(model.get(), replica.replica());
                        ctx.getLog()
                            .info(
                                "{} loaded in {} ms: context {}, {} KV blocks of {}, policy {}",
                                entityId,
                                (System.nanoTime() - start) / 1_000_000,
                                engine.core().maxModelLen(),
                                engine.core().scheduler().blocks().numBlocks(),
                                engine.core().scheduler().blocks().blockSize(),
                                engine.core().policy().configName());
                      } catch (RuntimeException | OutOfMemoryError e) {
                        String why = LoadFailures.describe(e);
                        // What the operator must fix is one line; a stack trace only for a bug.
                        if (LoadFailures.expected(e))
                          ctx.getLog().debug("{} failed to load", entityId, e);
                        else ctx.getLog().error("{} failed to load", entityId, e);
                        ctx.getLog().error("{} cannot serve: {}", entityId, why);
                        String reason = "model " + replica.model() + " failed to load: " + why;
                        health.failed(entityId, reason);
                        return UnavailableWorker.create(entityId, ErrorKind.INTERNAL, reason);
                      }
                      if (!metricsLogInterval.isZero())
                        timers.startTimerWithFixedDelay(LogMetrics.INSTANCE, metricsLogInterval);
                      var config = ctx.getSystem().settings().config();
                      int capacity =
                          maxAdapters > 0
                              ? maxAdapters
                              : config.hasPath("troupe.worker.max-adapters")
                                  ? config.getInt("troupe.worker.max-adapters")
                                  : DEFAULT_MAX_ADAPTERS;
                      ThreadPoolExecutor inputs = InputExecutor.fromConfig(entityId, config);
                      return new ModelWorker(ctx, entityId, engine, capacity, inputs);
                    }));
    // A failing step is a bug or a broken engine: fail what is in flight, reload, carry on.
    return Behaviors.supervise(worker)
        .onFailure(
            SupervisorStrategy.restartWithBackoff(
                Duration.ofSeconds(1), Duration.ofSeconds(30), 0.2));
  }

  private ModelWorker(
      ActorContext<Command> ctx,
      String entityId,
      Engine engine,
      int maxAdapters,
      ThreadPoolExecutor inputExecutor) {
    super(ctx);
    this.entityId = entityId;
    this.engine = engine;
    this.adapters = new AdapterSlots(maxAdapters);
    this.inputExecutor = inputExecutor;
    this.preparations = new Preparations(inputExecutor);
    this.requesters =
        new Requesters(ref -> ctx.watchWith(ref, new RequesterGone(ref)), ctx::unwatch);
    // Reading a checkpoint is file I/O: never on the pinned engine thread.
    this.loadExecutor = ctx.getSystem().dispatchers().lookup(DispatcherSelector.blocking());
    this.largeUpdates = new LargeUpdates(ctx.getSystem());
    this.replyBound = new ReplyBound(ctx.getSystem());
    this.trainedHere = TrainedAdapters.get(ctx.getSystem());
    // The role this node gives the model's replicas in disaggregated prefill/decode.
    this.kvRole =
        KvRoles.fromConfig(ctx.getSystem().settings().config())
            .of(ModelWorkerProtocol.parseEntityId(entityId).model());
    // What the prefix cache holds, for the gateways' cache-aware routing (with the role).
    this.cacheReports =
        CacheReporter.spawn(ctx, entityId, engine.core().scheduler().blocks().blockSize(), kvRole);
    // Its load (idle) and role at once: a prefill-only replica gets no request, so no step, until
    // the gateways know its role.
    cacheReports.tell(CacheReporter.changes(engine, List.of()));
    this.health = WorkerHealth.get(ctx.getSystem());
    this.node = ClusterViewProtocol.nodeName(ctx.getSystem().address());
    this.device = engine.core().device();
    if (engine.core().runner() instanceof CudaModelRunner r) {
      ActorRef<Command> self = ctx.getSelf();
      this.gpuRunner = r;
      this.onGpu = new GpuReplicas.Replica(entityId, task -> self.tell(new OnEngine(task)));
      GpuReplicas.get(ctx.getSystem()).register(engine.modelName(), onGpu);
    } else {
      this.gpuRunner = null;
      this.onGpu = null;
    }
    this.kv = new KvTransfers(ctx, entityId, engine);
    health.serving(entityId, ctx.getSelf());
  }

  @Override
  public Receive<Command> createReceive() {
    return newReceiveBuilder()
        .onMessage(Generate.class, this::onGenerate)
        .onMessage(InputDone.class, this::onInputDone)
        .onMessage(AdapterCheckpoint.class, this::onAdapterCheckpoint)
        .onMessage(AdapterLoaded.class, this::onAdapterLoaded)
        .onMessage(OnEngine.class, this::onEngine)
        .onMessage(Cancel.class, this::onCancel)
        .onMessage(Tokenize.class, this::onTokenize)
        .onMessage(Detokenize.class, this::onDetokenize)
        .onMessage(GetStatus.class, this::onGetStatus)
        .onMessage(Describe.class, this::onDescribe)
        .onMessageEquals(Step.INSTANCE, this::onStep)
        .onMessage(RequesterGone.class, this::onRequesterGone)
        .onMessageEquals(LogMetrics.INSTANCE, this::onLogMetrics)
        .onMessage(Drain.class, this::onDrain)
        .onMessage(KvTransfers.Export.class, this::onKvExport)
        .onMessage(KvTransfers.Release.class, this::onKvRelease)
        .onMessage(KvTransfers.Pulled.class, this::onKvPulled)
        .onMessageEquals(KvTransfers.Expire.INSTANCE, this::onKvExpire)
        .onMessageEquals(HandOff.INSTANCE, Behaviors::stopped) // PostStop: they migrate
        .onSignal(PostStop.class, s -> onStop(entityId + " stopped", true))
        .onSignal(PreRestart.class, s -> onStop("the worker restarted after a failure", false))
        .build();
  }

  // ------------------------------------------------------------------ generation

  private Behavior<Command> onGenerate(Generate g) {
    String id = g.request().requestId();
    if (draining) {
      // Not accepted here: the gateway sends it to another replica (nothing was generated).
      g.replyTo().tell(new Migrate(id, entityId + " is draining (its node is shutting down)"));
      return this;
    }
    if (requesters.contains(id)) {
      g.replyTo()
          .tell(
              new Failed(
                  id,
                  ErrorKind.BAD_REQUEST,
                  "request id " + id + " is already in flight",
                  "request_id"));
      return this;
    }
    requesters.track(id, g.replyTo());
    if (g.acknowledge()) g.replyTo().tell(new Accepted(id, entityId, getContext().getSelf()));
    if (g.request().kvTransfer() != null) {
      Rejection refused = kv.track(g.request());
      if (refused != null) {
        fail(id, refused);
        return this;
      }
    }
    Adapter adapter = g.request().adapter();
    if (adapter != null && !adapter.isBase()) load(adapter); // read while the input is prepared
    InputProcessor inputs = engine.inputs();
    try {
      CompletableFuture<EngineRequest> prepared =
          preparations.submit(id, () -> RequestMdc.with(id, () -> inputs.process(g.request())));
      getContext()
          .pipeToSelf(prepared, (request, error) -> new InputDone(g, prepared, request, error));
    } catch (RejectedExecutionException e) {
      fail(id, overloaded());
    }
    return this;
  }

  private Behavior<Command> onInputDone(InputDone done) {
    String id = done.generate().request().requestId();
    // cancelled, or its requester left, while it was prepared
    if (!preparations.finished(id, done.result())) return this;
    if (requesters.get(id) != done.generate().replyTo()) return this;
    if (done.error() != null) {
      fail(id, WireUpdates.rejection(done.error()));
      return this;
    }
    EngineRequest request = done.prepared();
    Adapter adapter = done.generate().request().adapter();
    if (adapter == null || adapter.isBase()) {
      admit(id, request.withAdapter(0, null, 0));
      return this;
    }
    Integer slot = adapters.lookup(adapter.name());
    if (slot != null) {
      admit(id, request.withAdapter(slot, adapter.name(), adapter.step()));
      return this;
    }
    // Not here yet (a restart, a moved replica, an evicted step): it waits for its adapter.
    load(adapter);
    loading.get(adapter.name()).add(new AwaitingAdapter(id, request, adapter));
    return this;
  }

  /** Queues a prepared request in the engine, on its adapter. */
  private void admit(String id, EngineRequest request) {
    Rejection refused =
        kv.tracks(id)
            ? RequestMdc.with(id, () -> kv.admit(request))
            : RequestMdc.with(id, () -> engine.add(request));
    if (refused != null) fail(id, refused);
    else scheduleStep();
  }

  private Behavior<Command> onStep() {
    stepScheduled = false;
    Engine.Step step;
    try {
      step = engine.step();
    } catch (RuntimeException | Error e) {
      // The supervisor restarts the replica; the cluster view says why.
      health.failing(entityId, "its engine failed: " + e);
      throw e;
    }
    rates.record(System.nanoTime(), engine.core().promptTokens(), engine.core().generatedTokens());
    for (RequestUpdate u : step.updates()) send(u);
    for (var f : step.failures()) fail(f.requestId(), f.rejection());
    kv.afterStep();
    cacheReports.tell(CacheReporter.changes(engine, adapters.names()));
    if (engine.hasWork()) scheduleStep();
    drained();
    return this;
  }

  private Behavior<Command> onKvExport(KvTransfers.Export e) {
    kv.onExport(e);
    return this;
  }

  private Behavior<Command> onKvRelease(KvTransfers.Release r) {
    kv.onRelease(r);
    return this;
  }

  private Behavior<Command> onKvExpire() {
    kv.onExpire();
    return this;
  }

  /** A decode request's KV pull ended: it runs, recomputes, or fails by the policy. */
  private Behavior<Command> onKvPulled(KvTransfers.Pulled p) {
    Rejection failed = RequestMdc.with(p.requestId(), () -> kv.onPulled(p));
    if (failed != null) {
      engine.abort(p.requestId());
      fail(p.requestId(), failed);
    } else scheduleStep();
    return this;
  }

  private Behavior<Command> onCancel(Cancel c) {
    String id = c.requestId();
    ActorRef<GenerationEvent> ref = requesters.get(id);
    if (ref == null) {
      engine.abort(id); // nobody listens (it may have just finished)
      return this;
    }
    if (!engine.isActive(id)) {
      // still being prepared or waiting for its adapter: it never started, so it ends as a refusal
      preparations.cancel(id);
      requesters.untrack(id);
      ref.tell(new Failed(id, ErrorKind.BAD_REQUEST, "The request was cancelled.", null));
      drained();
      return this;
    }
    RequestUpdate last = engine.abort(id);
    if (last != null) send(last);
    else requesters.untrack(id);
    drained();
    return this;
  }

  private Behavior<Command> onRequesterGone(RequesterGone gone) {
    for (String id : requesters.gone(gone.requester())) {
      preparations.cancel(id); // its input work stops too, queued or running
      engine.abort(id); // nobody listens: the update is dropped, the blocks are freed now
      kv.forget(id);
      getContext().getLog().debug("{}: requester of {} is gone, cancelled", entityId, id);
    }
    drained();
    return this;
  }

  // ------------------------------------------------------------------ adapters

  private Behavior<Command> onAdapterCheckpoint(AdapterCheckpoint c) {
    Adapter adapter = new Adapter(c.modelId(), c.step(), c.directory());
    if (!adapter.isBase()) load(adapter);
    return this;
  }

  /** Starts reading {@code adapter} unless it is registered or already being read. */
  private void load(Adapter adapter) {
    String name = adapter.name();
    if (adapters.contains(name) || loading.containsKey(name)) return;
    loading.put(name, new ArrayList<>());
    LoraAdapter inMemory = trainedHere.find(adapter.modelId(), adapter.step());
    if (inMemory != null) { // trained on this node: registered at the next message, no file read
      getContext().getSelf().tell(new AdapterLoaded(name, inMemory, null));
      return;
    }
    Path dir = Path.of(adapter.directory());
    int version = Math.toIntExact(adapter.step());
    getContext()
        .pipeToSelf(
            CompletableFuture.supplyAsync(
                () -> CheckpointStore.loadAdapter(dir, version), loadExecutor),
            (lora, error) -> new AdapterLoaded(name, lora, error));
  }

  /** Registers a read adapter between two steps and admits the requests that waited for it. */
  private Behavior<Command> onAdapterLoaded(AdapterLoaded loaded) {
    List<AwaitingAdapter> waiting = loading.remove(loaded.name());
    if (waiting == null) waiting = List.of();
    int slot = -1;
    String failure = null;
    if (loaded.error() != null) {
      failure = String.valueOf(WireUpdates.unwrap(loaded.error()).getMessage());
    } else {
      try {
        AdapterSlots.Registered r =
            adapters.register(loaded.name(), loaded.adapter(), engine.core());
        slot = r.id();
        getContext()
            .getLog()
            .info(
                "{}: serving adapter {} as #{}{}",
                entityId,
                loaded.name(),
                slot,
                r.evicted().isEmpty() ? "" : ", evicted " + r.evicted());
      } catch (RuntimeException e) { // shapes that do not fit the base model
        failure = e.getMessage();
      }
    }
    if (failure != null)
      getContext()
          .getLog()
          .warn("{}: cannot serve adapter {}: {}", entityId, loaded.name(), failure);
    for (AwaitingAdapter w : waiting) {
      if (!requesters.contains(w.id())) continue; // cancelled or its requester left
      if (slot > 0) {
        admit(w.id(), w.request().withAdapter(slot, w.adapter().name(), w.adapter().step()));
      } else {
        requesters
            .untrack(w.id())
            .tell(
                new Failed(
                    w.id(),
                    ErrorKind.NOT_FOUND,
                    "The model `"
                        + loaded.name()
                        + "` cannot be served: its checkpoint failed to load ("
                        + failure
                        + ").",
                    "model"));
      }
    }
    drained();
    return this;
  }

  // ------------------------------------------------------------------ training on this GPU

  /**
   * Runs work on the runner between two engine steps (generation waits for it, then goes on: the
   * next step is already queued when requests are in flight).
   */
  private Behavior<Command> onEngine(OnEngine work) {
    work.task().run(gpuRunner);
    return this;
  }

  // ------------------------------------------------------------------ tokenizer endpoints

  private Behavior<Command> onTokenize(Tokenize t) {
    TokenizerTasks.tokenize(inputExecutor, engine.inputs(), replyBound, t, this::overloaded);
    return this;
  }

  private Behavior<Command> onDetokenize(Detokenize d) {
    TokenizerTasks.detokenize(inputExecutor, engine.inputs(), replyBound, d, this::overloaded);
    return this;
  }

  // ------------------------------------------------------------------ status

  private Behavior<Command> onGetStatus(GetStatus s) {
    // A draining replica takes no new work: unanswered, a gateway's probe keeps it out of new
    // requests until it runs again (elsewhere, after the hand-off), and readiness leaves it out.
    if (!draining) s.replyTo().tell(status());
    return this;
  }

  private Behavior<Command> onDescribe(Describe d) {
    d.replyTo().tell(status());
    return this;
  }

  // ------------------------------------------------------------------ drain

  private Behavior<Command> onDrain(Drain d) {
    if (!draining)
      getContext()
          .getLog()
          .info("{}: draining, {} request(s) in flight", entityId, requesters.size());
    draining = true;
    drainWaiters.add(d.replyTo());
    drained();
    return this;
  }

  /** While draining, tells the waiters once nothing is in flight any more. */
  private void drained() {
    if (!draining || drainWaiters.isEmpty() || requesters.size() > 0) return;
    for (ActorRef<Drain.Drained> w : drainWaiters) w.tell(new Drain.Drained(entityId));
    drainWaiters.clear();
  }

  private Behavior<Command> onLogMetrics() {
    WorkerStatus s = status();
    getContext()
        .getLog()
        .info(
            "{}: waiting={} running={} preemptions={} kv={}/{} generated={}",
            entityId,
            s.waiting(),
            s.running(),
            s.preemptions(),
            s.kvBlocksUsed(),
            s.kvBlocksTotal(),
            s.generationTokens());
    return this;
  }

  /** The engine's load and counters, and where the replica runs and what it holds. */
  private WorkerStatus status() {
    long now = System.nanoTime();
    rates.record(now, engine.core().promptTokens(), engine.core().generatedTokens());
    return WireUpdates.status(entityId, engine)
        .withDetails(
            WireUpdates.details(
                node,
                device,
                adapters.names(),
                rates,
                now,
                draining || health.draining(),
                kvRole,
                kv.stats()));
  }

  /**
   * A stopping replica (its shard handed off to another node, the node shutting down) hands each
   * request in flight back to be resumed elsewhere ({@link Migrate}); a restart after a failure
   * fails them (the request may be what broke the engine: it is not passed on).
   */
  private Behavior<Command> onStop(String why, boolean migrate) {
    for (Map.Entry<String, ActorRef<GenerationEvent>> e : requesters.clear().entrySet())
      e.getValue()
          .tell(
              migrate
                  ? new Migrate(e.getKey(), why)
                  : new Failed(e.getKey(), ErrorKind.INTERNAL, why, null));
    inputExecutor.shutdownNow();
    if (onGpu != null) { // work queued for the runner fails; a trainer on it closes with it
      GpuReplicas.get(getContext().getSystem()).unregister(engine.modelName(), onGpu);
      onGpu.stop(why);
    }
    kv.stop();
    engine.close();
    if (migrate) health.stopped(entityId);
    else { // restarting: it loads again after the back-off
      String failure = health.failure(entityId);
      health.restarting(
          entityId, failure != null ? failure : "it failed (see the log of node " + node + ")");
    }
    return this;
  }

  // ------------------------------------------------------------------ requesters

  private void scheduleStep() {
    if (stepScheduled) return;
    stepScheduled = true;
    getContext().getSelf().tell(Step.INSTANCE);
  }

  /** Sends a request its update; its last one forgets it. */
  private void send(RequestUpdate u) {
    ActorRef<GenerationEvent> ref = requesters.get(u.requestId());
    if (ref == null) return;
    GenerationUpdate update = WireUpdates.update(u, entityId, getContext().getSelf());
    if (u.finished() && kv.tracks(u.requestId())) {
      KvHandle handle = kv.handle(u.requestId());
      if (handle != null)
        update =
            new GenerationUpdate(
                update.requestId(), update.started(), update.choices(), update.usage(), handle);
      kv.forget(u.requestId());
    }
    largeUpdates.send(ref, update);
    if (u.finished()) requesters.untrack(u.requestId());
  }

  /** Ends a request with its failure (it has left the engine, or never entered it). */
  private void fail(String id, Rejection why) {
    if (kv.tracks(id)) {
      kv.refused(id);
      kv.forget(id);
    }
    ActorRef<GenerationEvent> ref = requesters.untrack(id);
    if (ref != null) ref.tell(WireUpdates.failed(id, why));
    drained();
  }

  private Rejection overloaded() {
    return WireUpdates.overloaded(entityId, inputExecutor.getQueue().size());
  }
}
