package dev.troupe.trajectory;

import com.fasterxml.jackson.annotation.JsonSubTypes;
import com.fasterxml.jackson.annotation.JsonTypeInfo;
import dev.troupe.persistence.PersistenceSettings;
import dev.troupe.protocol.CborSerializable;
import dev.troupe.protocol.cluster.TrajectoryLogProtocol;
import dev.troupe.protocol.cluster.TrajectoryLogProtocol.Append;
import dev.troupe.protocol.cluster.TrajectoryLogProtocol.AppendFailed;
import dev.troupe.protocol.cluster.TrajectoryLogProtocol.AppendRejected;
import dev.troupe.protocol.cluster.TrajectoryLogProtocol.AppendReply;
import dev.troupe.protocol.cluster.TrajectoryLogProtocol.Appended;
import dev.troupe.protocol.cluster.TrajectoryLogProtocol.Command;
import dev.troupe.protocol.cluster.TrajectoryLogProtocol.Purge;
import dev.troupe.protocol.cluster.TrajectoryLogProtocol.Purged;
import dev.troupe.protocol.cluster.TrajectoryLogProtocol.ReadPage;
import dev.troupe.protocol.cluster.TrajectoryLogProtocol.SplitStats;
import dev.troupe.protocol.cluster.TrajectoryLogProtocol.TrajectoryPage;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.sharding.typed.javadsl.Entity;
import org.apache.pekko.persistence.typed.PersistenceId;
import org.apache.pekko.persistence.typed.javadsl.CommandHandlerWithReply;
import org.apache.pekko.persistence.typed.javadsl.EventHandler;
import org.apache.pekko.persistence.typed.javadsl.EventSourcedBehaviorWithEnforcedReplies;
import org.apache.pekko.persistence.typed.javadsl.ReplyEffect;
import org.apache.pekko.persistence.typed.javadsl.RetentionCriteria;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The trajectory log of one model (entity id = model UUID, sharded on role {@code trainer}). Groups
 * go to the {@link TrajectoryStore} first (rows past the committed end are invisible), then a
 * {@link GroupsLogged} event commits them: the reply is sent only after both, so an acknowledged
 * group survives a crash, and an {@code Idempotency-Key} seen before is answered without storing
 * again. Appends that arrive while a write is in flight are written together next (group commit:
 * one store transaction and one journal write for all of them). Per (split, step) statistics are
 * kept here and the resulting metrics are set on the model's checkpoint through {@link
 * MetricsSink}. Runs on a blocking dispatcher: store calls block.
 *
 * <p>Survives a restart: the committed end, per-split statistics and the most recent idempotency
 * keys (journal + snapshots); group payloads live in the store.
 */
public final class TrajectoryLog
    extends EventSourcedBehaviorWithEnforcedReplies<
        Command, TrajectoryLog.Event, TrajectoryLog.State> {
  private static final Logger log = LoggerFactory.getLogger(TrajectoryLog.class);

  /** Where split metrics go: the model's checkpoint (see {@code TrainableModel}). */
  @FunctionalInterface
  public interface MetricsSink {
    CompletionStage<?> record(String modelId, long step, Map<String, Double> metrics);
  }

  /** Journal events; type names carry a version so a renamed class still reads old rows. */
  @JsonTypeInfo(use = JsonTypeInfo.Id.NAME, property = "type")
  @JsonSubTypes({
    @JsonSubTypes.Type(value = GroupsLogged.class, name = "trajectory.groups-logged.v1"),
    @JsonSubTypes.Type(value = LogPurged.class, name = "trajectory.purged.v1")
  })
  public sealed interface Event extends CborSerializable {}

  /**
   * Groups {@code [firstSeq, firstSeq + count)} are logged under {@code split} at checkpoint {@code
   * step}; {@code idempotencyKey} may be null.
   */
  public record GroupsLogged(
      String split,
      long step,
      long firstSeq,
      int count,
      SplitStats stats,
      String idempotencyKey,
      long loggedAtMillis)
      implements Event {}

  /** Every group was deleted (with the model); sequence numbers keep growing. */
  public record LogPurged(long groupsDeleted) implements Event {}

  /**
   * @param nextSeq the committed end: groups below it are logged
   * @param stats per {@code split + "@" + step}
   * @param recentKeys idempotency key → the reply it got, oldest first
   */
  public record State(long nextSeq, Map<String, SplitStats> stats, Map<String, Appended> recentKeys)
      implements CborSerializable {
    static final State EMPTY = new State(0, Map.of(), Map.of());

    public State {
      stats = Map.copyOf(stats);
      recentKeys = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(recentKeys));
    }

    SplitStats statsOf(String split, long step) {
      return stats.getOrDefault(split + "@" + step, SplitStats.EMPTY);
    }
  }

  /** Private: the rows of a batch are committed in the store (or failed: {@code error}). */
  private record BatchWritten(List<Append> batch, Throwable error) implements Command {}

  /** Private: the checkpoint metrics were recorded (or failed to be); now answer the batch. */
  private record MetricsDone(List<Appended> replies, List<Waiter> waiters) implements Command {}

  /** Who is owed a reply for one append of a batch. */
  private record Waiter(ActorRef<AppendReply> replyTo, String idempotencyKey) {
    static Waiter of(Append a) {
      return new Waiter(a.replyTo(), a.idempotencyKey());
    }
  }

  private final String modelId;
  private final TrajectoryStore store;
  private final MetricsSink metrics;
  private final PersistenceSettings settings;
  private final ActorContext<Command> context;
  private final org.apache.pekko.serialization.Serialization serialization;

  // Group commit (not persisted: an unanswered request is simply lost with the node). While one
  // batch is being written, later appends queue up and are written together in one transaction and
  // one journal write, so concurrent clients share commits.
  private final List<Append> queued = new ArrayList<>();
  private final Map<String, List<ActorRef<AppendReply>>> waitingOnKey = new HashMap<>();
  private boolean writing;

  /**
   * Hosts the logs on role {@code trainer} (a proxy elsewhere), on {@code dispatcher}: their store
   * calls block.
   *
   * @param store the trajectory store; null on nodes without the role (never used there)
   */
  public static void init(
      ActorSystem<?> system,
      TrajectoryStore store,
      MetricsSink metrics,
      PersistenceSettings settings,
      String dispatcher) {
    ClusterSharding.get(system)
        .init(
            Entity.of(
                    TrajectoryLogProtocol.TYPE_KEY,
                    ctx -> create(ctx.getEntityId(), store, metrics, settings))
                .withRole(TrajectoryLogProtocol.ROLE)
                .withEntityProps(DispatcherSelector.fromConfig(dispatcher)));
  }

  /** The behaviour for model {@code modelId}. */
  public static Behavior<Command> create(
      String modelId, TrajectoryStore store, MetricsSink metrics, PersistenceSettings settings) {
    return Behaviors.setup(ctx -> new TrajectoryLog(ctx, modelId, store, metrics, settings));
  }

  /** The journal id of a model's log. */
  public static PersistenceId persistenceId(String modelId) {
    return PersistenceId.of("TrajectoryLog", modelId);
  }

  private TrajectoryLog(
      ActorContext<Command> ctx,
      String modelId,
      TrajectoryStore store,
      MetricsSink metrics,
      PersistenceSettings settings) {
    super(persistenceId(modelId));
    this.context = ctx;
    this.serialization =
        org.apache.pekko.serialization.SerializationExtension.get(
            org.apache.pekko.actor.typed.javadsl.Adapter.toClassic(ctx.getSystem()));
    this.modelId = modelId;
    this.store = store;
    this.metrics = metrics;
    this.settings = settings;
  }

  @Override
  public State emptyState() {
    return State.EMPTY;
  }

  @Override
  public RetentionCriteria retentionCriteria() {
    return RetentionCriteria.snapshotEvery(settings.snapshotEvery(), 2);
  }

  @Override
  public CommandHandlerWithReply<Command, Event, State> commandHandler() {
    return newCommandHandlerWithReplyBuilder()
        .forAnyState()
        .onCommand(Append.class, this::onAppend)
        .onCommand(ReadPage.class, this::onReadPage)
        .onCommand(Purge.class, this::onPurge)
        .onCommand(TrajectoryLogProtocol.GetCounts.class, this::onGetCounts)
        .onCommand(BatchWritten.class, this::onBatchWritten)
        .onCommand(MetricsDone.class, this::onMetricsDone)
        .build();
  }

  private ReplyEffect<Event, State> onAppend(State state, Append cmd) {
    String key = cmd.idempotencyKey();
    if (key != null && state.recentKeys().containsKey(key)) {
      return Effect().reply(cmd.replyTo(), duplicate(state.recentKeys().get(key)));
    }
    if (key != null && waitingOnKey.containsKey(key)) {
      // The same key is being written right now: answer with its outcome.
      waitingOnKey.get(key).add(cmd.replyTo());
      return Effect().noReply();
    }
    String unstorable = unstorable(cmd, state);
    if (unstorable != null) {
      log.warn("Model {}: refusing an append that cannot be journaled: {}", modelId, unstorable);
      if (key != null) waitingOnKey.remove(key);
      return Effect().reply(cmd.replyTo(), new AppendRejected(unstorable));
    }
    if (cmd.groups().isEmpty()) {
      return Effect()
          .reply(
              cmd.replyTo(),
              new Appended(
                  cmd.split(),
                  cmd.step(),
                  0,
                  0,
                  state.nextSeq(),
                  state.statsOf(cmd.split(), cmd.step()).toMetrics(cmd.split()),
                  false));
    }
    if (key != null) waitingOnKey.put(key, new ArrayList<>());
    queued.add(cmd);
    if (!writing) startWrite(state);
    return Effect().noReply();
  }

  /**
   * Why this append's event could not be journaled, or null. Checked before it joins a batch: an
   * event the journal rejects would stop the entity and fail every append written with it, so a
   * request whose data cannot be serialized (a lone surrogate in its split or a metric name) fails
   * alone, here, and the entity keeps serving. The event is small (no group payloads): serializing
   * it once more costs microseconds.
   */
  private String unstorable(Append cmd, State state) {
    GroupsLogged trial =
        new GroupsLogged(
            cmd.split(),
            cmd.step(),
            state.nextSeq(),
            cmd.groups().size(),
            cmd.stats(),
            cmd.idempotencyKey(),
            System.currentTimeMillis());
    try {
      serialization.serialize(trial).get();
      return null;
    } catch (Exception e) {
      return "the append cannot be stored: " + e.getMessage();
    }
  }

  /** Writes every queued append in one store transaction, off the actor. */
  private void startWrite(State state) {
    List<Append> batch = List.copyOf(queued);
    queued.clear();
    writing = true;
    List<TrajectoryStore.Rows> rows = new ArrayList<>(batch.size());
    for (Append a : batch) rows.add(new TrajectoryStore.Rows(a.split(), a.step(), a.groups()));
    long firstSeq = state.nextSeq();
    context.pipeToSelf(
        CompletableFuture.runAsync(
            () -> store.write(modelId, firstSeq, rows), context.getExecutionContext()),
        (ok, err) -> new BatchWritten(batch, err));
  }

  private ReplyEffect<Event, State> onBatchWritten(State state, BatchWritten done) {
    if (done.error() != null) {
      int groups = done.batch().stream().mapToInt(a -> a.groups().size()).sum();
      log.warn("Model {}: storing {} groups failed: {}", modelId, groups, done.error().toString());
      for (Append a : done.batch())
        answer(Waiter.of(a), new AppendFailed("the trajectory store is unavailable"));
      writing = false;
      if (!queued.isEmpty()) startWrite(state);
      return Effect().noReply();
    }
    List<Event> events = new ArrayList<>(done.batch().size());
    long seq = state.nextSeq();
    long now = System.currentTimeMillis();
    for (Append a : done.batch()) {
      events.add(
          new GroupsLogged(
              a.split(), a.step(), seq, a.groups().size(), a.stats(), a.idempotencyKey(), now));
      seq += a.groups().size();
    }
    return Effect()
        .persist(events)
        .thenRun(
            (State s) -> {
              List<Appended> replies = new ArrayList<>();
              Map<String, Appended> bySplitStep = new LinkedHashMap<>();
              for (Event e : events) {
                Appended r = replyFor((GroupsLogged) e, s);
                replies.add(r);
                bySplitStep.put(r.split() + "@" + r.step(), r);
              }
              List<CompletableFuture<?>> recorded = new ArrayList<>();
              for (Appended r : bySplitStep.values()) {
                recorded.add(
                    metrics
                        .record(modelId, r.step(), r.metrics())
                        .toCompletableFuture()
                        .exceptionally(
                            err -> {
                              log.warn(
                                  "Model {}: recording {} metrics failed: {}",
                                  modelId,
                                  r.split(),
                                  err.toString());
                              return null;
                            }));
              }
              context.pipeToSelf(
                  CompletableFuture.allOf(recorded.toArray(CompletableFuture[]::new)),
                  (ok, err) ->
                      new MetricsDone(replies, done.batch().stream().map(Waiter::of).toList()));
              writing = false;
              if (!queued.isEmpty()) startWrite(s);
            })
        .thenNoReply();
  }

  private ReplyEffect<Event, State> onMetricsDone(State state, MetricsDone done) {
    for (int i = 0; i < done.waiters().size(); i++)
      answer(done.waiters().get(i), done.replies().get(i));
    return Effect().noReply();
  }

  /** Replies to an append and to every later request that carried the same key meanwhile. */
  private void answer(Waiter a, AppendReply reply) {
    a.replyTo().tell(reply);
    if (a.idempotencyKey() == null) return;
    List<ActorRef<AppendReply>> waiting = waitingOnKey.remove(a.idempotencyKey());
    if (waiting == null) return;
    AppendReply again = reply instanceof Appended ok ? duplicate(ok) : reply;
    for (ActorRef<AppendReply> w : waiting) w.tell(again);
  }

  private static Appended duplicate(Appended first) {
    return new Appended(
        first.split(),
        first.step(),
        first.groups(),
        first.trajectories(),
        first.firstSeq(),
        first.metrics(),
        true);
  }

  /** A batch still in flight may land after this; the model is gone, so nothing reaches it. */
  private ReplyEffect<Event, State> onPurge(State state, Purge cmd) {
    long deleted = store.deleteModel(modelId);
    return Effect()
        .persist(new LogPurged(deleted))
        .thenReply(cmd.replyTo(), s -> new Purged(deleted));
  }

  /** Groups and trajectories per split, summed over the steps ({@code stats} keys split@step). */
  private ReplyEffect<Event, State> onGetCounts(State state, TrajectoryLogProtocol.GetCounts cmd) {
    Map<String, TrajectoryLogProtocol.SplitCount> splits = new java.util.TreeMap<>();
    state
        .stats()
        .forEach(
            (key, stats) ->
                splits.merge(
                    key.substring(0, key.lastIndexOf('@')),
                    new TrajectoryLogProtocol.SplitCount(stats.groups(), stats.trajectories()),
                    (a, b) ->
                        new TrajectoryLogProtocol.SplitCount(
                            a.groups() + b.groups(), a.trajectories() + b.trajectories())));
    return Effect().reply(cmd.replyTo(), new TrajectoryLogProtocol.Counts(splits));
  }

  private ReplyEffect<Event, State> onReadPage(State state, ReadPage cmd) {
    TrajectoryStore.Page page =
        store.read(
            modelId, cmd.split(), cmd.afterSeq(), state.nextSeq(), cmd.limit(), cmd.maxBytes());
    return Effect().reply(cmd.replyTo(), new TrajectoryPage(page.groups(), page.hasMore()));
  }

  private static Appended replyFor(GroupsLogged e, State s) {
    int trajectories = (int) e.stats().trajectories();
    return new Appended(
        e.split(),
        e.step(),
        e.count(),
        trajectories,
        e.firstSeq(),
        s.statsOf(e.split(), e.step()).toMetrics(e.split()),
        false);
  }

  @Override
  public EventHandler<State, Event> eventHandler() {
    return newEventHandlerBuilder()
        .forAnyState()
        .onEvent(GroupsLogged.class, (State s, GroupsLogged e) -> apply(s, e))
        .onEvent(
            LogPurged.class, (State s, LogPurged e) -> new State(s.nextSeq(), Map.of(), Map.of()))
        .build();
  }

  private State apply(State s, GroupsLogged e) {
    Map<String, SplitStats> stats = new java.util.HashMap<>(s.stats());
    stats.merge(e.split() + "@" + e.step(), e.stats(), SplitStats::plus);
    State next = new State(e.firstSeq() + e.count(), stats, s.recentKeys());
    if (e.idempotencyKey() == null || settings.idempotencyKeysKept() == 0) return next;
    LinkedHashMap<String, Appended> keys = new LinkedHashMap<>(s.recentKeys());
    keys.put(e.idempotencyKey(), replyFor(e, next));
    while (keys.size() > settings.idempotencyKeysKept()) {
      keys.remove(keys.keySet().iterator().next());
    }
    return new State(next.nextSeq(), next.stats(), keys);
  }
}
