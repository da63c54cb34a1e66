package dev.troupe.worker;

import dev.troupe.adapters.CheckpointStore;
import dev.troupe.engine.LoraAdapter;
import dev.troupe.engine.core.Engine;
import dev.troupe.protocol.cluster.GenerationRequest.Adapter;
import dev.troupe.protocol.cluster.ModelWorkerProtocol;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Cancel;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Command;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Completed;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Detokenize;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.ErrorKind;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Failed;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Generate;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationEvent;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GetStatus;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Rejected;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.ReplicaId;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Tokenize;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.WorkerStatus;
import dev.troupe.protocol.cluster.ServedModels;
import dev.troupe.protocol.cluster.ServedModels.ServedModel;
import dev.troupe.protocol.cluster.TrainingJobProtocol.AdapterCheckpoint;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import org.apache.pekko.actor.NoSerializationVerificationNeeded;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.PreRestart;
import org.apache.pekko.actor.typed.SupervisorStrategy;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;
import org.slf4j.MDC;

/**
 * One replica of one model: the sharded entity {@code <model>#<replica>} ({@link
 * ModelWorkerProtocol#TYPE_KEY}) on a node with role {@code worker}, owning an {@link Engine}.
 *
 * <p>Runs one engine step per message: while work remains it sends itself {@code Step}, so requests
 * that arrive (or are cancelled) in the meantime join (or leave) between two steps — continuous
 * batching. Backpressure: when the engine's waiting queue is full a request is answered with {@link
 * Failed} {@code OVERLOADED} at once. Each requester is watched; when it stops (the client went
 * away) its requests are cancelled and their KV blocks freed before the next step.
 *
 * <p>Trained checkpoints are served as LoRA adapters over the base model ({@link AdapterSlots}): a
 * {@link Generate} naming an {@link Adapter} runs every chunk with that adapter, so a request ends
 * on the checkpoint it started with while newer ones are registered between two steps. An adapter
 * is read from its checkpoint directory off this thread — when the trainer announces it ({@link
 * AdapterCheckpoint}) or, lazily, when a request names one this replica does not hold (after a
 * restart or a move to another node); requests naming it wait for it, others keep running.
 *
 * <p>Thread: the pinned dispatcher {@code troupe.worker.dispatcher} (the ND4J runner is confined to
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

  /** An adapter was read from its checkpoint directory (off the worker's thread), or failed to. */
  private record AdapterLoaded(String name, LoraAdapter adapter, Throwable error)
      implements Command, NoSerializationVerificationNeeded {}

  /** Adapters registered at once by default; a LoRA r 8 adapter of a 1B model is ~20 MB. */
  static final int DEFAULT_MAX_ADAPTERS = 8;

  /** A watched requester stopped. */
  private record RequesterGone(ActorRef<GenerationEvent> requester)
      implements Command, NoSerializationVerificationNeeded {}

  private final String entityId;
  private final Engine engine;
  private final Map<String, ActorRef<GenerationEvent>> requesters = new HashMap<>();
  private final Map<ActorRef<GenerationEvent>, Set<String>> byRequester = new HashMap<>();
  private boolean stepScheduled;
  private final AdapterSlots adapters;

  /** Adapters being read, with the requests waiting for them. */
  private final Map<String, List<Generate>> loading = new HashMap<>();

  private final Executor loadExecutor;

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
                      Optional<ServedModel> model = models.find(replica.model());
                      if (model.isEmpty())
                        return Unavailable.create(
                            entityId,
                            ErrorKind.NOT_FOUND,
                            "The model `" + replica.model() + "` does not exist.");
                      Engine engine;
                      try {
                        long start = System.nanoTime();
                        engine = engines.open(model.get(), replica.replica());
                        ctx.getLog()
                            .info(
                                "{} loaded in {} ms: context {}, {} KV blocks of {}, policy {}",
                                entityId,
                                (System.nanoTime() - start) / 1_000_000,
                                engine.maxModelLen(),
                                engine.scheduler().blocks().numBlocks(),
                                engine.scheduler().blocks().blockSize(),
                                engine.policy().configName());
                      } catch (RuntimeException e) {
                        ctx.getLog()
                            .error("{} failed to load model {}", entityId, model.get().path(), e);
                        return Unavailable.create(
                            entityId,
                            ErrorKind.INTERNAL,
                            "model " + replica.model() + " failed to load: " + e.getMessage());
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
                      return new ModelWorker(ctx, entityId, engine, capacity);
                    }));
    // A failing step is a bug or a broken engine: fail what is in flight, reload, carry on.
    return Behaviors.supervise(worker)
        .onFailure(
            SupervisorStrategy.restartWithBackoff(
                Duration.ofSeconds(1), Duration.ofSeconds(30), 0.2));
  }

  private ModelWorker(ActorContext<Command> ctx, String entityId, Engine engine, int maxAdapters) {
    super(ctx);
    this.entityId = entityId;
    this.engine = engine;
    this.adapters = new AdapterSlots(maxAdapters);
    // Reading a checkpoint is file I/O: never on the pinned engine thread.
    this.loadExecutor = ctx.getSystem().dispatchers().lookup(DispatcherSelector.blocking());
  }

  @Override
  public Receive<Command> createReceive() {
    return newReceiveBuilder()
        .onMessage(Generate.class, this::onGenerate)
        .onMessage(AdapterCheckpoint.class, this::onAdapterCheckpoint)
        .onMessage(AdapterLoaded.class, this::onAdapterLoaded)
        .onMessage(Cancel.class, this::onCancel)
        .onMessage(Tokenize.class, this::onTokenize)
        .onMessage(Detokenize.class, this::onDetokenize)
        .onMessage(GetStatus.class, this::onGetStatus)
        .onMessageEquals(Step.INSTANCE, this::onStep)
        .onMessage(RequesterGone.class, this::onRequesterGone)
        .onMessageEquals(LogMetrics.INSTANCE, this::onLogMetrics)
        .onSignal(PostStop.class, s -> onStop("the worker stopped"))
        .onSignal(PreRestart.class, s -> onStop("the worker restarted after a failure"))
        .build();
  }

  private Behavior<Command> onGenerate(Generate g) {
    String id = g.request().requestId();
    Adapter adapter = g.request().adapter();
    if (adapter == null || adapter.isBase()) {
      admit(g, 0, adapter == null ? engine.weightVersion() : 0, false);
      return this;
    }
    if (requesters.containsKey(id)) { // the engine's own check cannot see a request still waiting
      g.replyTo()
          .tell(
              new Failed(
                  id,
                  ErrorKind.BAD_REQUEST,
                  "request id " + id + " is already in flight",
                  "request_id"));
      return this;
    }
    Integer slot = adapters.lookup(adapter.name());
    if (slot != null) {
      admit(g, slot, adapter.step(), false);
      return this;
    }
    // Not here yet (a restart, a moved replica, an evicted step): read it; the request waits.
    track(id, g.replyTo());
    load(adapter);
    loading.get(adapter.name()).add(g);
    return this;
  }

  /**
   * Queues a request on adapter {@code slot} (0 = base model) in the engine.
   *
   * @param tracked its requester is already tracked (it waited for its adapter)
   */
  private void admit(Generate g, int slot, long version, boolean tracked) {
    String id = g.request().requestId();
    List<GenerationEvent> refused = withMdc(id, () -> engine.add(g.request(), slot, version));
    if (!refused.isEmpty()) {
      if (tracked) untrack(id); // else the id may be another request's, still in flight
      refused.forEach(g.replyTo()::tell);
      return;
    }
    track(id, g.replyTo());
    scheduleStep();
  }

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
    List<Generate> waiting = loading.remove(loaded.name());
    if (waiting == null) waiting = List.of();
    int slot = -1;
    String failure = null;
    if (loaded.error() != null) {
      Throwable e = loaded.error();
      if (e instanceof java.util.concurrent.CompletionException && e.getCause() != null)
        e = e.getCause();
      failure = String.valueOf(e.getMessage());
    } else {
      try {
        AdapterSlots.Registered r = adapters.register(loaded.name(), loaded.adapter(), engine);
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
    for (Generate g : waiting) {
      String id = g.request().requestId();
      if (!requesters.containsKey(id)) continue; // cancelled or its requester left while it waited
      if (slot > 0) {
        admit(g, slot, g.request().adapter().step(), true);
      } else {
        untrack(id);
        g.replyTo()
            .tell(
                new Failed(
                    id,
                    ErrorKind.NOT_FOUND,
                    "The model `"
                        + loaded.name()
                        + "` cannot be served: its checkpoint failed to load ("
                        + failure
                        + ").",
                    "model"));
      }
    }
    return this;
  }

  private void track(String id, ActorRef<GenerationEvent> replyTo) {
    requesters.put(id, replyTo);
    byRequester
        .computeIfAbsent(
            replyTo,
            ref -> {
              getContext().watchWith(ref, new RequesterGone(ref));
              return new HashSet<>();
            })
        .add(id);
  }

  private void untrack(String id) {
    ActorRef<GenerationEvent> ref = requesters.remove(id);
    if (ref == null) return;
    Set<String> ids = byRequester.get(ref);
    if (ids != null && ids.remove(id) && ids.isEmpty()) {
      byRequester.remove(ref);
      getContext().unwatch(ref);
    }
  }

  private Behavior<Command> onStep() {
    stepScheduled = false;
    dispatch(engine.step());
    if (engine.hasWork()) scheduleStep();
    return this;
  }

  private Behavior<Command> onCancel(Cancel c) {
    String id = c.requestId();
    if (!engine.isActive(id) && requesters.containsKey(id)) {
      // still waiting for its adapter: it never started, so it ends as a refusal
      ActorRef<GenerationEvent> ref = requesters.get(id);
      untrack(id);
      ref.tell(new Failed(id, ErrorKind.BAD_REQUEST, "The request was cancelled.", null));
      return this;
    }
    dispatch(engine.cancel(id));
    return this;
  }

  private Behavior<Command> onRequesterGone(RequesterGone gone) {
    Set<String> ids = byRequester.remove(gone.requester());
    if (ids == null) return this;
    for (String id : ids) {
      requesters.remove(id);
      engine.cancel(id); // nobody listens: the events are dropped, the blocks are freed now
      getContext().getLog().debug("{}: requester of {} is gone, cancelled", entityId, id);
    }
    return this;
  }

  private Behavior<Command> onTokenize(Tokenize t) {
    t.replyTo().tell(engine.tokenize(t));
    return this;
  }

  private Behavior<Command> onDetokenize(Detokenize d) {
    d.replyTo().tell(engine.detokenize(d.tokens()));
    return this;
  }

  private Behavior<Command> onGetStatus(GetStatus s) {
    s.replyTo().tell(status());
    return this;
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
            engine.generatedTokens());
    return this;
  }

  private WorkerStatus status() {
    var scheduler = engine.scheduler();
    return new WorkerStatus(
        entityId,
        engine.modelName(),
        engine.maxModelLen(),
        engine.policy().configName(),
        scheduler.numWaiting(),
        scheduler.numRunning(),
        scheduler.numPreemptions(),
        scheduler.blocks().numUsed(),
        scheduler.blocks().numBlocks(),
        engine.weightVersion(),
        engine.promptTokens(),
        engine.generatedTokens());
  }

  private Behavior<Command> onStop(String why) {
    for (Map.Entry<String, ActorRef<GenerationEvent>> e : requesters.entrySet())
      e.getValue().tell(new Failed(e.getKey(), ErrorKind.INTERNAL, why, null));
    requesters.clear();
    byRequester.clear();
    engine.close();
    return this;
  }

  private void scheduleStep() {
    if (stepScheduled) return;
    stepScheduled = true;
    getContext().getSelf().tell(Step.INSTANCE);
  }

  /** Sends each event to its requester; a request's last event forgets it. */
  private void dispatch(List<GenerationEvent> events) {
    for (GenerationEvent event : events) {
      String id = event.requestId();
      ActorRef<GenerationEvent> ref = requesters.get(id);
      if (ref == null) continue;
      ref.tell(event);
      if (event instanceof Completed || event instanceof Failed) untrack(id);
    }
  }

  private static <T> T withMdc(String requestId, java.util.function.Supplier<T> body) {
    MDC.put("requestId", requestId);
    try {
      return body.get();
    } finally {
      MDC.remove("requestId");
    }
  }

  /** A replica that cannot serve (unknown or unloadable model): every request gets the reason. */
  static final class Unavailable {
    private Unavailable() {}

    static Behavior<Command> create(String entityId, ErrorKind kind, String message) {
      return Behaviors.receive(Command.class)
          .onMessage(
              Generate.class,
              g -> {
                g.replyTo().tell(new Failed(g.request().requestId(), kind, message, "model"));
                return Behaviors.same();
              })
          .onMessage(
              Tokenize.class,
              t -> {
                t.replyTo().tell(new Rejected(kind, message, "model"));
                return Behaviors.same();
              })
          .onMessage(
              Detokenize.class,
              d -> {
                d.replyTo().tell(new Rejected(kind, message, "model"));
                return Behaviors.same();
              })
          .onMessage(AdapterCheckpoint.class, c -> Behaviors.same())
          .onMessage(
              GetStatus.class,
              s -> {
                ReplicaId r = ModelWorkerProtocol.parseEntityId(entityId);
                s.replyTo()
                    .tell(new WorkerStatus(entityId, r.model(), 0, "fcfs", 0, 0, 0, 0, 0, 0, 0, 0));
                return Behaviors.same();
              })
          .build();
    }
  }
}
