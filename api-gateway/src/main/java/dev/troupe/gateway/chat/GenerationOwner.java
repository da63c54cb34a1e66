package dev.troupe.gateway.chat;

import dev.troupe.gateway.replicas.NodeLost;
import dev.troupe.gateway.replicas.ReplicaSelector.Attempts;
import dev.troupe.gateway.replicas.ReplicaSelector.Replica;
import dev.troupe.protocol.cluster.GenerationRequest;
import dev.troupe.protocol.cluster.GenerationRequest.Resume;
import dev.troupe.protocol.cluster.GenerationRequest.ResumedChoice;
import dev.troupe.protocol.cluster.ModelWorkerProtocol;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Accepted;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Cancel;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.ChoiceUpdate;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.ErrorKind;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Failed;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Generate;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationEvent;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationUpdate;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Migrate;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.NoSerializationVerificationNeeded;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.eventstream.EventStream;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;
import org.apache.pekko.actor.typed.javadsl.TimerScheduler;

/**
 * The gateway's owner of one generation: sends it to a replica, passes the worker's events on to
 * the HTTP response ({@code out}), and moves the request when its worker is lost — token-exact
 * request migration, on by default.
 *
 * <p><b>Who watches what.</b> The worker acknowledges each request at once ({@link Accepted}, with
 * its actor): the owner then death-watches that actor and listens for {@link NodeLost} (its node
 * unreachable, downed or removed, from the gateway's {@code LivenessWatcher}); a replica that stops
 * on purpose (its shard handed off, its node leaving) says {@link Migrate}. No timeout decides that
 * a worker is lost, except a replica that does not acknowledge: an attempt not {@link Accepted}
 * within {@link MigrationSettings#acceptTimeout()} (a replica being restarted holds requests until
 * its model is loaded) is cancelled and moves to another replica when one can take it, and the
 * replica counts as restarting for new requests until it answers again; with no other replica the
 * attempt waits up to the ask timeout. The worker watches the owner in turn, so a request whose
 * owner stops (client gone) is cancelled.
 *
 * <p><b>Resuming.</b> The owner keeps the original request and, per choice, the token ids already
 * passed on and whether the choice ended. On loss it cancels the old attempt (in case its node is
 * only unreachable), picks another reachable replica (preferring ones this request has not lost)
 * and sends the request again with a {@link Resume} of those tokens: the new worker replays them
 * and continues, so the client sees one uninterrupted stream, the same tokens for greedy and seeded
 * sampling as without the failure. Each attempt has its own request id ({@code <id>~<attempt>}), so
 * late events of a lost attempt are told apart and dropped; the client sees the original id, one
 * {@code Started} (later ones are stripped) and the usage of the last worker, which counts the
 * replayed tokens. A request lost before anything was generated, or a beam search (which reports
 * its beams at the end), is simply sent again from scratch.
 *
 * <p><b>Bounds.</b> At most {@link MigrationSettings#maxMigrations()} moves; when no replica is
 * reachable the owner looks again every {@link MigrationSettings#retryInterval()} until {@link
 * MigrationSettings#deadline()} after the loss, then ends the request with {@link Failed} {@code
 * OVERLOADED} (503): an error event and {@code [DONE]} on a stream, a 503 status otherwise. A new
 * request with no reachable replica fails the same way at once. The deadline also bounds, from the
 * owner's start, the wait for a first worker to acknowledge the request: a request no replica has
 * accepted by then fails the same way, which is a 503 status before the first byte on a stream too,
 * so that a client gets an answer before any connection or client timeout (the HTTP idle timeout
 * applies only between requests). Once a worker has accepted it, the request waits in that worker's
 * queue as it would in vLLM's: the worker is death-watched, and its queue bound answers overload.
 *
 * <p>One per request, a system actor on the gateway node; it stops with the request.
 */
final class GenerationOwner extends AbstractBehavior<GenerationOwner.Command> {

  /** Local messages of the owner. */
  interface Command extends NoSerializationVerificationNeeded {}

  private record FromWorker(GenerationEvent event) implements Command {}

  private record WorkerStopped(String attemptId) implements Command {}

  private record NodeWentAway(NodeLost lost) implements Command {}

  private record NotAccepted(String attemptId) implements Command {}

  private record SlowToAccept(String attemptId) implements Command {}

  private enum Retry implements Command {
    INSTANCE
  }

  /** The migration deadline passed and no worker has started the request. */
  private enum NotStarted implements Command {
    INSTANCE
  }

  /** The HTTP side stopped listening (client gone, stream failed). */
  private enum ConsumerGone implements Command {
    INSTANCE
  }

  private static final Object ACCEPT_TIMER = "accept";
  private static final Object SLOW_TIMER = "slow";
  private static final Object START_TIMER = "start";

  private final ActorRef<GenerationEvent> out;
  private final GenerationRequest request;
  private final Attempts replicas;
  private final Duration acceptTimeout;
  private final MigrationSettings migration;
  private final TimerScheduler<Command> timers;
  private final ActorRef<GenerationEvent> self;
  private final ActorRef<NodeLost> nodeLost;
  private final boolean beam;
  private final List<List<Integer>> tokens = new ArrayList<>();
  private final boolean[] finished;
  private final Set<String> avoid = new HashSet<>();
  private boolean started;
  private int attempt;
  private String attemptId;
  private Replica replica; // null while looking for one
  private ActorRef<ModelWorkerProtocol.Command> worker; // once known
  private boolean accepted;
  private boolean everAccepted;
  private int migrations;
  private long lostAt = -1;
  private String lostWhy;

  static Behavior<Command> create(
      ActorRef<GenerationEvent> out,
      GenerationRequest request,
      Attempts replicas,
      Duration acceptTimeout,
      MigrationSettings migration) {
    return Behaviors.setup(
        ctx ->
            Behaviors.withTimers(
                timers ->
                    new GenerationOwner(
                            ctx, timers, out, request, replicas, acceptTimeout, migration)
                        .submit()));
  }

  private GenerationOwner(
      ActorContext<Command> ctx,
      TimerScheduler<Command> timers,
      ActorRef<GenerationEvent> out,
      GenerationRequest request,
      Attempts replicas,
      Duration acceptTimeout,
      MigrationSettings migration) {
    super(ctx);
    this.acceptTimeout = acceptTimeout;
    this.migration = migration;
    this.out = out;
    this.request = request;
    this.replicas = replicas;
    this.timers = timers;
    this.self = ctx.messageAdapter(GenerationEvent.class, FromWorker::new);
    this.nodeLost = ctx.messageAdapter(NodeLost.class, NodeWentAway::new);
    this.beam = request.sampling().useBeamSearch();
    int n = request.sampling().n();
    for (int i = 0; i < n; i++) tokens.add(new ArrayList<>());
    this.finished = new boolean[n];
    ctx.getSystem().eventStream().tell(new EventStream.Subscribe<>(NodeLost.class, nodeLost));
    ctx.watchWith(out, ConsumerGone.INSTANCE);
    if (migration.enabled())
      timers.startSingleTimer(START_TIMER, NotStarted.INSTANCE, migration.deadline());
  }

  @Override
  public Receive<Command> createReceive() {
    return newReceiveBuilder()
        .onMessage(FromWorker.class, m -> onEvent(m.event()))
        .onMessage(WorkerStopped.class, this::onWorkerStopped)
        .onMessage(NodeWentAway.class, this::onNodeLost)
        .onMessage(NotAccepted.class, this::onNotAccepted)
        .onMessage(SlowToAccept.class, this::onSlowToAccept)
        .onMessageEquals(Retry.INSTANCE, this::onRetry)
        .onMessageEquals(NotStarted.INSTANCE, this::onNotStarted)
        .onMessageEquals(ConsumerGone.INSTANCE, this::onConsumerGone)
        .onSignal(PostStop.class, s -> onStop())
        .build();
  }

  // ------------------------------------------------------------------ attempts

  /** Sends the request (or its continuation) to a reachable replica, or waits for one. */
  private Behavior<Command> submit() {
    Optional<Replica> next = replicas.next(avoid);
    if (next.isEmpty()) {
      replica = null;
      if (lostAt < 0)
        return finish(
            "No replica of model `" + replicas.model() + "` is reachable right now; retry later.");
      if (System.nanoTime() - lostAt >= migration.deadline().toNanos())
        return finish(
            gaveUp(
                "no replica of model `"
                    + replicas.model()
                    + "` could continue it within "
                    + seconds(migration.deadline())
                    + "; retry later."));
      timers.startSingleTimer(Retry.INSTANCE, migration.retryInterval());
      return this;
    }
    return send(next.get());
  }

  /** Sends the request (or its continuation) to {@code to} as a new attempt. */
  private Behavior<Command> send(Replica to) {
    replica = to;
    attempt++;
    attemptId = attempt == 1 ? request.requestId() : request.requestId() + "~" + attempt;
    accepted = false;
    Resume resume = resume();
    replica
        .ref()
        .tell(
            new Generate(
                request.toBuilder().requestId(attemptId).resume(resume).build(), self, true));
    timers.startSingleTimer(ACCEPT_TIMER, new NotAccepted(attemptId), acceptTimeout);
    Duration soon = migration.acceptTimeout();
    if (migration.enabled() && soon.compareTo(acceptTimeout) < 0)
      timers.startSingleTimer(SLOW_TIMER, new SlowToAccept(attemptId), soon);
    if (attempt > 1)
      getContext()
          .getLog()
          .info(
              "request {} continues on {} (attempt {}, {} tokens delivered)",
              request.requestId(),
              replica.entityId(),
              attempt,
              resume == null ? 0 : resume.totalTokens());
    return this;
  }

  /** What the client has: null when the request starts over (nothing yet, or beam search). */
  private Resume resume() {
    if (!started || beam) return null;
    List<ResumedChoice> choices = new ArrayList<>(tokens.size());
    for (int i = 0; i < tokens.size(); i++)
      choices.add(new ResumedChoice(tokens.get(i), finished[i]));
    return new Resume(choices);
  }

  private Behavior<Command> onRetry() {
    return replica == null ? submit() : this;
  }

  // ------------------------------------------------------------------ the worker's events

  private Behavior<Command> onEvent(GenerationEvent e) {
    if (replica == null || !e.requestId().equals(attemptId)) return this; // a lost attempt's
    if (e instanceof Accepted a) {
      onAccepted(a.worker());
      return a.worker() != null && !replicas.reachable(a.worker())
          ? lose("its node is unreachable", true)
          : this;
    }
    if (e instanceof Migrate m) {
      // The replica is stopping or draining: new requests go elsewhere while another can serve
      // (it is live again once it answers, i.e. runs again after its hand-off).
      replicas.unacknowledged(replica.entityId());
      return lose(m.reason());
    }
    if (e instanceof Failed f) {
      // A replica taken as a continuation that cannot take it now: another one may.
      if (attempt > 1 && f.kind() == ErrorKind.OVERLOADED)
        return lose(replica.entityId() + " is overloaded");
      out.tell(new Failed(request.requestId(), f.kind(), f.message(), f.param()));
      return Behaviors.stopped();
    }
    GenerationUpdate u = (GenerationUpdate) e;
    if (!accepted) onAccepted(u.started() == null ? null : u.started().worker());
    else if (worker == null && u.started() != null) watch(u.started().worker());
    for (ChoiceUpdate c : u.choices()) {
      tokens.get(c.index()).addAll(c.tokenIds());
      if (c.finished()) finished[c.index()] = true;
    }
    // The client saw one Started; a continuation's only says who serves it now.
    out.tell(
        new GenerationUpdate(
            request.requestId(), started ? null : u.started(), u.choices(), u.usage()));
    started |= u.started() != null;
    if (started) timers.cancel(START_TIMER);
    return u.done() ? Behaviors.stopped() : this;
  }

  /** The attempt reached a worker: watch it from now on; a loss from here starts a new clock. */
  private void onAccepted(ActorRef<ModelWorkerProtocol.Command> by) {
    accepted = true;
    everAccepted = true;
    lostAt = -1;
    timers.cancel(ACCEPT_TIMER);
    timers.cancel(SLOW_TIMER);
    // A live worker holds it now: it waits in that worker's queue as long as it would in vLLM's
    // (the worker is death-watched, and its own queue bound answers overload with a 503).
    timers.cancel(START_TIMER);
    watch(by);
  }

  private void watch(ActorRef<ModelWorkerProtocol.Command> by) {
    if (by == null) return;
    worker = by;
    replicas.located(replica.entityId(), by);
    getContext().watchWith(by, new WorkerStopped(attemptId));
  }

  /**
   * No worker has accepted the request within the migration deadline of its arrival: a 503 naming
   * why, before the client's first byte, rather than a wait no connection or client timeout is sure
   * to outlast.
   */
  private Behavior<Command> onNotStarted() {
    if (started || accepted) return this;
    String why;
    if (replica == null)
      why =
          "no replica of model `"
              + replicas.model()
              + "` could take it"
              + (lostWhy == null ? "" : "; last loss: " + lostWhy);
    else
      why =
          replica.entityId()
              + " has not acknowledged it"
              + (lostWhy == null ? "" : "; it moved there after: " + lostWhy);
    getContext()
        .getLog()
        .info(
            "request {} not started within {}: {}",
            request.requestId(),
            seconds(migration.deadline()),
            why);
    return finish(
        "No model worker started this request within "
            + seconds(migration.deadline())
            + " ("
            + why
            + "); retry later.");
  }

  // ------------------------------------------------------------------ losses

  private Behavior<Command> onWorkerStopped(WorkerStopped s) {
    return replica != null && s.attemptId().equals(attemptId)
        ? lose(replica.entityId() + " stopped")
        : this;
  }

  private Behavior<Command> onNodeLost(NodeWentAway m) {
    if (replica == null) return this;
    Address where = worker != null ? address(worker) : replicas.lastSeenAt(replica.entityId());
    return m.lost().address().equals(where) ? lose(m.lost().reason(), true) : this;
  }

  private Behavior<Command> onNotAccepted(NotAccepted m) {
    if (replica == null || !m.attemptId().equals(attemptId) || accepted) return this;
    if (!everAccepted) // as before migration: nothing took the request in time
    return finish("No model worker answered in time; retry later.");
    return lose(replica.entityId() + " did not answer within " + seconds(acceptTimeout), true);
  }

  /**
   * The attempt was not acknowledged within the migration's accept timeout: its replica is most
   * likely being restarted (sharding holds the request until the model is loaded). When another
   * replica can take it, the attempt is cancelled and the request moves there like a lost one;
   * otherwise it keeps waiting (up to the ask timeout).
   */
  private Behavior<Command> onSlowToAccept(SlowToAccept m) {
    if (replica == null || !m.attemptId().equals(attemptId) || accepted) return this;
    replicas.unacknowledged(replica.entityId());
    Set<String> skip = new HashSet<>(avoid);
    skip.add(replica.entityId());
    Optional<Replica> other = replicas.next(skip);
    if (other.isEmpty() || skip.contains(other.get().entityId())) return this; // none else
    return lose(
        replica.entityId() + " did not acknowledge it within " + seconds(migration.acceptTimeout()),
        true,
        other.get());
  }

  /** The current attempt's worker is gone (or said it dropped the request): resume elsewhere. */
  private Behavior<Command> lose(String why) {
    return lose(why, false);
  }

  /**
   * The current attempt is lost: resume elsewhere, within the bounds.
   *
   * @param mayStillRun the worker may only be cut off: cancel it, in case it comes back
   */
  private Behavior<Command> lose(String why, boolean mayStillRun) {
    return lose(why, mayStillRun, null);
  }

  /**
   * The current attempt is lost: resume on {@code next} (null: a replica chosen now), within the
   * bounds.
   */
  private Behavior<Command> lose(String why, boolean mayStillRun, Replica next) {
    if (mayStillRun) replica.ref().tell(new Cancel(attemptId));
    if (worker != null) getContext().unwatch(worker);
    worker = null;
    timers.cancel(ACCEPT_TIMER);
    timers.cancel(SLOW_TIMER);
    avoid.add(replica.entityId());
    replica = null;
    if (lostAt < 0) lostAt = System.nanoTime();
    lostWhy = why;
    if (!migration.enabled())
      return finish("The model worker generating this request was lost (" + why + "); retry.");
    if (++migrations > migration.maxMigrations())
      return finish(
          gaveUp("it has already moved " + migration.maxMigrations() + " times; retry later."));
    getContext().getLog().info("request {}: worker lost ({}), migrating", request.requestId(), why);
    return next == null ? submit() : send(next);
  }

  private String gaveUp(String tail) {
    return "The model worker generating this request was lost (" + lostWhy + ") and " + tail;
  }

  // ------------------------------------------------------------------ the end

  private Behavior<Command> onConsumerGone() {
    if (replica != null) replica.ref().tell(new Cancel(attemptId));
    return Behaviors.stopped();
  }

  /** Ends the request with a 503: an error event on a stream, the status otherwise. */
  private Behavior<Command> finish(String message) {
    if (replica != null) replica.ref().tell(new Cancel(attemptId));
    out.tell(new Failed(request.requestId(), ErrorKind.OVERLOADED, message, null));
    return Behaviors.stopped();
  }

  private Behavior<Command> onStop() {
    getContext().getSystem().eventStream().tell(new EventStream.Unsubscribe<>(nodeLost));
    return this;
  }

  private static Address address(ActorRef<?> ref) {
    return ref.path().address();
  }

  private static String seconds(Duration d) {
    return d.toMillis() % 1000 == 0 ? d.toSeconds() + " s" : d.toMillis() + " ms";
  }
}
