package dev.troupe.gateway.chat;

import dev.troupe.gateway.replicas.NodeLost;
import dev.troupe.gateway.replicas.ReplicaSelector.Attempts;
import dev.troupe.gateway.replicas.ReplicaSelector.Prefill;
import dev.troupe.gateway.replicas.ReplicaSelector.Replica;
import dev.troupe.protocol.cluster.GenerationRequest;
import dev.troupe.protocol.cluster.GenerationRequest.Resume;
import dev.troupe.protocol.cluster.KvHandle;
import dev.troupe.protocol.cluster.KvTransfer;
import dev.troupe.protocol.cluster.LargeMessages;
import dev.troupe.protocol.cluster.ModelWorkerProtocol;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Accepted;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Cancel;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.ErrorKind;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Failed;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Generate;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationEvent;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationUpdate;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Migrate;
import java.time.Duration;
import java.util.HashSet;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.pekko.NotUsed;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.NoSerializationVerificationNeeded;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.actor.typed.eventstream.EventStream;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.BehaviorBuilder;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.TimerScheduler;
import org.apache.pekko.stream.OverflowStrategy;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.stream.typed.javadsl.ActorSource;

/**
 * The gateway's owner of one generation: sends it to a replica, passes the worker's events on to
 * the HTTP response ({@code out}), and moves the request when its worker is lost — token-exact
 * request migration, on by default. One per request, a system actor on the gateway node, started by
 * materializing {@link #events}; it stops with the request.
 *
 * <p><b>Phases.</b>
 *
 * <pre>
 *   awaiting acceptance ──Accepted or first update──▶ streaming ──last update or Failed──▶ done
 *      │   ▲                                            │
 *      │   └────────── next attempt sent ───────────────┤ worker lost (stopped, node lost, Migrate)
 *      │                                                ▼
 *      └── lost / moved ──▶ migrating (no replica reachable; looks again) ──▶ done (503)
 * </pre>
 *
 * <ul>
 *   <li><b>Awaiting acceptance</b> ({@link #awaiting}): an attempt was sent with {@code
 *       acknowledge}; the worker answers {@link Accepted} at once, even while it queues the
 *       request. Bounds: {@code accept-timeout} (the attempt moves to another replica when one can
 *       take it, and its replica counts as restarting for new requests), {@code attempt-timeout}
 *       (given up: a 503 for a first attempt, a loss for a continuation), and from the owner's
 *       start {@code deadline} (no worker has accepted the request: a 503 before the first byte).
 *   <li><b>Streaming</b> ({@link #streaming}): a worker holds the request; the owner death-watches
 *       its actor and listens for {@link NodeLost} (its node unreachable, downed or removed); a
 *       replica stopping on purpose says {@link Migrate}. No timeout applies: the request waits in
 *       the worker's queue as it would in vLLM's (the worker's queue bound answers overload).
 *   <li><b>Migrating</b> ({@link #migrating}): the worker was lost and no replica is reachable; the
 *       owner looks again every {@code retry-interval}, up to {@code deadline} after the loss.
 * </ul>
 *
 * <p><b>Resuming.</b> On a loss the owner cancels the old attempt (in case its node is only
 * unreachable), picks another reachable replica (preferring ones this request has not lost) and
 * sends the request again with a {@link Resume} of the tokens its client has ({@link Delivered}):
 * the new worker replays them and continues, so the client sees one uninterrupted stream, the same
 * tokens for greedy and seeded sampling as without the failure. Each attempt has its own request id
 * ({@code <id>~<attempt>}), so late events of a lost attempt are dropped; the client sees the
 * original id, one {@code Started} and the usage of the last worker, which counts the replayed
 * tokens. At most {@code max-migrations} moves; past any bound the request ends with {@link Failed}
 * {@code OVERLOADED} (503): an error event and {@code [DONE]} on a stream, a 503 status otherwise.
 * The worker watches the owner in turn, so a request whose owner stops (client gone) is cancelled.
 *
 * <p><b>Prefill leg.</b> A request the gateway splits into prefill and decode ({@link Prefill},
 * disaggregated prefill/decode) starts in a phase before these ({@link #prefilling}): the owner
 * sends the prefill replica the request as a prefill leg ({@link PrefillLegs#of}: {@link
 * KvTransfer.RemoteDecode}, one token, not streamed; the client sees nothing of it) and takes the
 * {@link KvHandle} from its last update; the first attempt then carries it ({@link
 * KvHandle#toRemotePrefill}) and its replica pulls the prompt's KV instead of computing it. A leg
 * that fails, is lost, is not acknowledged within {@code accept-timeout} or, once acknowledged,
 * does not finish within {@code attempt-timeout} is cancelled and the request is served whole by
 * the decode replica; so is a first attempt whose replica could not pull the blocks (a {@link
 * Failed} naming {@code kv_transfer_params}). A client that leaves cancels the leg. A continuation
 * after a lost worker never carries the handle (the blocks were pulled or are gone): it recomputes,
 * as any continuation.
 *
 * <p>Timers are keyed by their {@link Timer} name, one attempt at a time: a timer cancelled or
 * restarted never delivers its message afterwards (Pekko's guarantee), so no timeout can reach a
 * later attempt.
 */
public final class GenerationOwner {

  /** Events a slow client may fall behind by before the request is failed (none are dropped). */
  private static final int BUFFER = 16_384;

  private static final AtomicLong OWNERS = new AtomicLong();

  /** The {@code param} of a failure to pull a prefill's KV blocks. */
  private static final String KV_TRANSFER_PARAMS = "kv_transfer_params";

  /** Local messages of the owner. */
  interface Command extends NoSerializationVerificationNeeded {}

  private record FromWorker(GenerationEvent event) implements Command {}

  /** A part of a worker's update was kept until its others come ({@link UpdateParts}). */
  private enum PartKept implements Command {
    INSTANCE
  }

  private record WorkerStopped(String attemptId) implements Command {}

  private record NodeWentAway(NodeLost lost) implements Command {}

  /** The owner's timers, one per bound of {@link MigrationSettings}. */
  private enum Timer implements Command {
    /** {@code deadline} from the owner's start: no worker has accepted the request. */
    START,
    /** {@code accept-timeout}: the attempt is unacknowledged; move it if another replica can. */
    MOVE,
    /** {@code attempt-timeout}: the attempt is unacknowledged and could not move; give it up. */
    GIVE_UP,
    /** {@code retry-interval}: look for a reachable replica again. */
    RETRY,
    /**
     * {@code accept-timeout} until the prefill leg is acknowledged, then {@code attempt-timeout}:
     * the leg has not finished; serve the request whole.
     */
    PREFILL
  }

  /** The HTTP side stopped listening (client gone, stream failed). */
  private enum ConsumerGone implements Command {
    INSTANCE
  }

  /** One try of the request on one replica. */
  private record Attempt(int number, String id, Replica replica) {}

  /** The prefill leg in flight: its request id and when it was sent. */
  private record Leg(String id, long sentNanos) {}

  /**
   * The request has been without a worker since {@code sinceNanos}; {@code why} is the latest loss.
   */
  private record Loss(long sinceNanos, String why) {
    Loss then(String reason) {
      return new Loss(sinceNanos, reason);
    }
  }

  private final ActorContext<Command> ctx;
  private final TimerScheduler<Command> timers;
  private final ActorRef<GenerationEvent> out;
  private final GenerationRequest request;
  private final Attempts replicas;
  private final MigrationSettings settings;
  private final ActorRef<GenerationEvent> self;
  private final ActorRef<NodeLost> nodeLost;
  private final Delivered delivered;
  private final Prefill prefill;
  private final PrefillListener prefillListener;
  private final Set<String> avoid = new HashSet<>();

  /** What the first attempt asks of KV transfer: the client's, or the prefill leg's handle. */
  private KvTransfer firstTransfer;

  private int attempts;
  private int migrations;
  private boolean everAccepted;

  /**
   * The events of {@code request} on {@code replicas} — one {@link GenerationUpdate} per engine
   * step with news for it, ending with the last update or a {@link Failed} — the single path behind
   * streaming and non-streaming answers. Materializing it starts the request's owner; if the stream
   * ends any other way (the client went away) the owner tells the worker to {@link Cancel}.
   */
  public static Source<GenerationEvent, NotUsed> events(
      ActorSystem<?> system,
      Attempts replicas,
      GenerationRequest request,
      MigrationSettings settings) {
    return events(system, replicas, request, settings, null, PrefillListener.NONE);
  }

  /**
   * {@link #events(ActorSystem, Attempts, GenerationRequest, MigrationSettings)} with a prefill leg
   * on {@code prefill} first (null: served whole); {@code listener} hears how the leg went.
   */
  public static Source<GenerationEvent, NotUsed> events(
      ActorSystem<?> system,
      Attempts replicas,
      GenerationRequest request,
      MigrationSettings settings,
      Prefill prefill,
      PrefillListener listener) {
    return ActorSource.<GenerationEvent>actorRef(
            e -> false, e -> Optional.empty(), BUFFER, OverflowStrategy.fail())
        .mapMaterializedValue(
            out -> {
              system.systemActorOf(
                  create(out, request, replicas, settings, prefill, listener),
                  LargeMessages.GENERATION_OWNER_PREFIX + OWNERS.incrementAndGet(),
                  Props.empty());
              return NotUsed.getInstance();
            })
        .takeWhile(e -> !isLast(e), true);
  }

  /** The event after which nothing follows: a failure, or the update carrying the usage. */
  public static boolean isLast(GenerationEvent e) {
    return e instanceof Failed || (e instanceof GenerationUpdate u && u.done());
  }

  static Behavior<Command> create(
      ActorRef<GenerationEvent> out,
      GenerationRequest request,
      Attempts replicas,
      MigrationSettings settings) {
    return create(out, request, replicas, settings, null, PrefillListener.NONE);
  }

  static Behavior<Command> create(
      ActorRef<GenerationEvent> out,
      GenerationRequest request,
      Attempts replicas,
      MigrationSettings settings,
      Prefill prefill,
      PrefillListener listener) {
    return Behaviors.setup(
        ctx ->
            Behaviors.withTimers(
                timers ->
                    new GenerationOwner(
                            ctx, timers, out, request, replicas, settings, prefill, listener)
                        .start()));
  }

  private GenerationOwner(
      ActorContext<Command> ctx,
      TimerScheduler<Command> timers,
      ActorRef<GenerationEvent> out,
      GenerationRequest request,
      Attempts replicas,
      MigrationSettings settings,
      Prefill prefill,
      PrefillListener listener) {
    this.ctx = ctx;
    this.prefill = prefill;
    this.prefillListener = listener;
    this.firstTransfer = request.kvTransfer();
    this.timers = timers;
    this.out = out;
    this.request = request;
    this.replicas = replicas;
    this.settings = settings;
    UpdateParts parts = new UpdateParts(ctx.getSystem());
    this.self =
        ctx.messageAdapter(
            GenerationEvent.class,
            e -> {
              GenerationEvent whole = parts.join(e);
              return whole == null ? PartKept.INSTANCE : new FromWorker(whole);
            });
    this.nodeLost = ctx.messageAdapter(NodeLost.class, NodeWentAway::new);
    this.delivered = new Delivered(request);
  }

  private Behavior<Command> start() {
    ctx.getSystem().eventStream().tell(new EventStream.Subscribe<>(NodeLost.class, nodeLost));
    ctx.watchWith(out, ConsumerGone.INSTANCE);
    if (settings.enabled()) timers.startSingleTimer(Timer.START, Timer.START, settings.deadline());
    if (prefill != null) return sendLeg();
    return submit(null);
  }

  // ------------------------------------------------------------------ phases

  /** The attempt was sent; its worker has not acknowledged it yet. */
  private Behavior<Command> awaiting(Attempt a, Loss loss) {
    return phase(
        a,
        Behaviors.receive(Command.class)
            .onMessage(FromWorker.class, m -> isFor(a, m), m -> onEventAwaiting(a, loss, m.event()))
            .onMessage(NodeWentAway.class, m -> onNodeLost(a, null, loss, m.lost()))
            .onMessageEquals(Timer.MOVE, () -> onUnacknowledged(a, loss))
            .onMessageEquals(Timer.GIVE_UP, () -> onGiveUp(a, loss))
            .onMessageEquals(Timer.START, () -> onNotStarted(a, loss)));
  }

  /** A worker holds the request: its updates are passed on until the last. */
  private Behavior<Command> streaming(Attempt a, ActorRef<ModelWorkerProtocol.Command> worker) {
    return phase(
        a,
        Behaviors.receive(Command.class)
            .onMessage(
                FromWorker.class, m -> isFor(a, m), m -> onEventStreaming(a, worker, m.event()))
            .onMessage(
                WorkerStopped.class,
                m -> m.attemptId().equals(a.id()),
                m -> lose(a, worker, a.replica().entityId() + " stopped", false, null, null))
            .onMessage(NodeWentAway.class, m -> onNodeLost(a, worker, null, m.lost())));
  }

  /**
   * The prefill leg runs on the prefill replica ({@code worker} once known); the request waits for
   * its KV handle, or falls back to being served whole.
   */
  private Behavior<Command> prefilling(Leg leg, ActorRef<ModelWorkerProtocol.Command> worker) {
    return Behaviors.receive(Command.class)
        .onMessage(
            FromWorker.class,
            m -> m.event().requestId().equals(leg.id()),
            m -> onLegEvent(leg, worker, m.event()))
        .onMessage(
            WorkerStopped.class,
            m -> m.attemptId().equals(leg.id()),
            m -> legFailed(leg, worker, prefill.replica().entityId() + " stopped", false))
        .onMessage(
            NodeWentAway.class,
            m -> m.lost().address().equals(legAddress(worker)),
            m -> legFailed(leg, worker, m.lost().reason(), true))
        .onMessageEquals(Timer.PREFILL, () -> onLegTimeout(leg, worker))
        .onMessageEquals(ConsumerGone.INSTANCE, () -> legCancelled(leg))
        .onMessage(Command.class, m -> Behaviors.same())
        .onSignal(PostStop.class, s -> unsubscribe())
        .build();
  }

  /** The worker was lost and no replica is reachable: look again until the deadline. */
  private Behavior<Command> migrating(Loss loss) {
    return phase(
        null,
        Behaviors.receive(Command.class)
            .onMessageEquals(Timer.RETRY, () -> submit(loss))
            .onMessageEquals(Timer.START, () -> onNotStarted(null, loss)));
  }

  /**
   * A phase's receive, completed with what every phase does: the client going away cancels {@code
   * current} (null: none) and ends the request; other messages (a lost attempt's late events, the
   * signals another phase listens for) are dropped.
   */
  private Behavior<Command> phase(Attempt current, BehaviorBuilder<Command> own) {
    return own.onMessageEquals(ConsumerGone.INSTANCE, () -> cancelled(current))
        .onMessage(Command.class, m -> Behaviors.same())
        .onSignal(PostStop.class, s -> unsubscribe())
        .build();
  }

  private static boolean isFor(Attempt a, FromWorker m) {
    return m.event().requestId().equals(a.id());
  }

  // ------------------------------------------------------------------ the prefill leg

  /**
   * Sends the leg. Its bound is {@code accept-timeout} until its replica acknowledges it (a replica
   * being restarted would hold it for tens of seconds), then {@code attempt-timeout}.
   */
  private Behavior<Command> sendLeg() {
    Leg leg = new Leg(request.requestId() + "~prefill", System.nanoTime());
    prefill.replica().ref().tell(new Generate(PrefillLegs.of(request, leg.id()), self, true));
    timers.startSingleTimer(Timer.PREFILL, Timer.PREFILL, settings.acceptTimeout());
    return prefilling(leg, null);
  }

  private Behavior<Command> onLegTimeout(Leg leg, ActorRef<ModelWorkerProtocol.Command> worker) {
    if (worker == null) { // not acknowledged: new requests avoid the replica until it answers
      replicas.unacknowledged(prefill.replica().entityId());
      return legFailed(
          leg, null, "it was not acknowledged within " + seconds(settings.acceptTimeout()), true);
    }
    return legFailed(
        leg, worker, "it did not finish within " + seconds(settings.attemptTimeout()), true);
  }

  /** The node of the leg's worker, or where its replica was last seen. */
  private Address legAddress(ActorRef<ModelWorkerProtocol.Command> worker) {
    return worker != null
        ? worker.path().address()
        : replicas.lastSeenAt(prefill.replica().entityId());
  }

  private Behavior<Command> onLegEvent(
      Leg leg, ActorRef<ModelWorkerProtocol.Command> worker, GenerationEvent e) {
    if (e instanceof Accepted accepted)
      return worker != null ? Behaviors.same() : prefilling(leg, watchLeg(leg, accepted.worker()));
    if (e instanceof GenerationUpdate u) {
      if (worker == null && u.started() != null) worker = watchLeg(leg, u.started().worker());
      if (!u.done()) return prefilling(leg, worker);
      if (u.kvHandle() == null)
        return legFailed(leg, worker, "its last update carried no KV handle", false);
      release(leg, worker);
      long nanos = System.nanoTime() - leg.sentNanos();
      prefillListener.prefilled(prefill.replica().entityId(), nanos);
      firstTransfer = u.kvHandle().toRemotePrefill();
      return submit(null);
    }
    if (e instanceof Failed f) return legFailed(leg, worker, f.message(), false);
    return legFailed(leg, worker, ((Migrate) e).reason(), false);
  }

  /** The leg reached its worker: watched from now on, bounded by {@code attempt-timeout}. */
  private ActorRef<ModelWorkerProtocol.Command> watchLeg(
      Leg leg, ActorRef<ModelWorkerProtocol.Command> by) {
    if (by == null) return null;
    replicas.located(prefill.replica().entityId(), by);
    ctx.watchWith(by, new WorkerStopped(leg.id()));
    timers.startSingleTimer(Timer.PREFILL, Timer.PREFILL, settings.attemptTimeout());
    return by;
  }

  /** The leg failed: the request is served whole by its decode replica. */
  private Behavior<Command> legFailed(
      Leg leg, ActorRef<ModelWorkerProtocol.Command> worker, String why, boolean mayStillRun) {
    if (mayStillRun) prefill.replica().ref().tell(new Cancel(leg.id()));
    release(leg, worker);
    ctx.getLog()
        .info(
            "request {}: prefill leg on {} failed ({}); served whole",
            request.requestId(),
            prefill.replica().entityId(),
            why);
    prefillListener.failed(prefill.replica().entityId(), why, System.nanoTime() - leg.sentNanos());
    return submit(null);
  }

  /** The client left while the leg ran: the leg is cancelled too. */
  private Behavior<Command> legCancelled(Leg leg) {
    prefill.replica().ref().tell(new Cancel(leg.id()));
    prefill.lease().close();
    return Behaviors.stopped();
  }

  private void release(Leg leg, ActorRef<ModelWorkerProtocol.Command> worker) {
    timers.cancel(Timer.PREFILL);
    if (worker != null) ctx.unwatch(worker);
    prefill.lease().close();
  }

  // ------------------------------------------------------------------ attempts

  /** Sends the request (or its continuation) to a reachable replica, or waits for one. */
  private Behavior<Command> submit(Loss loss) {
    Optional<Replica> next = replicas.next(avoid);
    if (next.isPresent()) return send(next.get(), loss);
    if (loss == null)
      return finish(
          null,
          "No replica of model `" + replicas.model() + "` is reachable right now; retry later.");
    if (System.nanoTime() - loss.sinceNanos() >= settings.deadline().toNanos())
      return finish(
          null,
          gaveUp(
              loss,
              "no replica of model `"
                  + replicas.model()
                  + "` could continue it within "
                  + seconds(settings.deadline())
                  + "; retry later."));
    timers.startSingleTimer(Timer.RETRY, Timer.RETRY, settings.retryInterval());
    return migrating(loss);
  }

  /** Sends the request (or its continuation) to {@code to} as a new attempt. */
  private Behavior<Command> send(Replica to, Loss loss) {
    int number = ++attempts;
    Attempt a =
        new Attempt(
            number, number == 1 ? request.requestId() : request.requestId() + "~" + number, to);
    Resume resume = delivered.resume();
    // The first attempt carries the KV transfer (the client's, or the prefill leg's handle). A
    // continuation computes its prompt itself: the lost attempt may have pulled the prefill side's
    // blocks already (a lease is pulled once), and a prefill half resumed elsewhere holds no blocks
    // of its first replica (its response then carries no kv_transfer_params).
    KvTransfer kv = number == 1 ? firstTransfer : null;
    to.ref()
        .tell(
            new Generate(
                request.toBuilder().requestId(a.id()).resume(resume).kvTransfer(kv).build(),
                self,
                true));
    timers.startSingleTimer(Timer.GIVE_UP, Timer.GIVE_UP, settings.attemptTimeout());
    if (settings.enabled() && settings.acceptTimeout().compareTo(settings.attemptTimeout()) < 0)
      timers.startSingleTimer(Timer.MOVE, Timer.MOVE, settings.acceptTimeout());
    if (number > 1)
      ctx.getLog()
          .info(
              "request {} continues on {} (attempt {}, {} tokens delivered)",
              request.requestId(),
              to.entityId(),
              number,
              resume == null ? 0 : resume.totalTokens());
    return awaiting(a, loss);
  }

  // ------------------------------------------------------------------ the worker's events

  private Behavior<Command> onEventAwaiting(Attempt a, Loss loss, GenerationEvent e) {
    if (e instanceof Accepted accepted) {
      ActorRef<ModelWorkerProtocol.Command> worker = accepted(a, accepted.worker());
      if (worker != null && !replicas.reachable(worker))
        return lose(a, worker, "its node is unreachable", true, null, null);
      return streaming(a, worker);
    }
    if (e instanceof GenerationUpdate u) { // the first update also says the worker took it
      ActorRef<ModelWorkerProtocol.Command> worker =
          accepted(a, u.started() == null ? null : u.started().worker());
      return forward(a, worker, u, true);
    }
    return onEnd(a, null, loss, e);
  }

  private Behavior<Command> onEventStreaming(
      Attempt a, ActorRef<ModelWorkerProtocol.Command> worker, GenerationEvent e) {
    if (e instanceof GenerationUpdate u) {
      boolean located = worker == null && u.started() != null;
      if (located) worker = watch(a, u.started().worker());
      return forward(a, worker, u, located);
    }
    if (e instanceof Accepted) return Behaviors.same();
    return onEnd(a, worker, null, e);
  }

  /** A {@link Migrate} or a {@link Failed} of the current attempt. */
  private Behavior<Command> onEnd(
      Attempt a, ActorRef<ModelWorkerProtocol.Command> worker, Loss loss, GenerationEvent e) {
    if (e instanceof Migrate m) {
      // The replica is stopping or draining: new requests go elsewhere while another can serve
      // (it is live again once it answers, i.e. runs again after its hand-off).
      replicas.unacknowledged(a.replica().entityId());
      return lose(a, worker, m.reason(), false, null, loss);
    }
    Failed f = (Failed) e;
    // The gateway's own split: the decode replica could not pull the prefill's blocks (and its
    // policy is to fail): served whole there instead, as after a failed prefill leg.
    if (prefill != null
        && a.number() == 1
        && firstTransfer instanceof KvTransfer.RemotePrefill
        && KV_TRANSFER_PARAMS.equals(f.param())) {
      prefillListener.pullFailed(prefill.replica().entityId(), f.message());
      ctx.getLog()
          .info(
              "request {}: {} could not pull its prompt's KV ({}); served whole",
              request.requestId(),
              a.replica().entityId(),
              f.message());
      return send(a.replica(), loss);
    }
    // A replica taken as a continuation that cannot take it now: another one may.
    if (a.number() > 1 && f.kind() == ErrorKind.OVERLOADED)
      return lose(a, worker, a.replica().entityId() + " is overloaded", false, null, loss);
    out.tell(new Failed(request.requestId(), f.kind(), f.message(), f.param()));
    return Behaviors.stopped();
  }

  /**
   * Passes an update on to the client, with one {@code Started} in all.
   *
   * @param newPhase streaming starts, or its worker became known: a new behaviour
   */
  private Behavior<Command> forward(
      Attempt a,
      ActorRef<ModelWorkerProtocol.Command> worker,
      GenerationUpdate u,
      boolean newPhase) {
    out.tell(delivered.add(u));
    if (u.done()) return Behaviors.stopped();
    return newPhase ? streaming(a, worker) : Behaviors.same();
  }

  /**
   * The attempt reached a worker: its timers stop (it waits in that worker's queue as in vLLM's),
   * the worker is watched from now on, and a loss from here starts a new clock.
   */
  private ActorRef<ModelWorkerProtocol.Command> accepted(
      Attempt a, ActorRef<ModelWorkerProtocol.Command> by) {
    everAccepted = true;
    timers.cancel(Timer.MOVE);
    timers.cancel(Timer.GIVE_UP);
    timers.cancel(Timer.START);
    return watch(a, by);
  }

  private ActorRef<ModelWorkerProtocol.Command> watch(
      Attempt a, ActorRef<ModelWorkerProtocol.Command> by) {
    if (by == null) return null;
    replicas.located(a.replica().entityId(), by);
    ctx.watchWith(by, new WorkerStopped(a.id()));
    return by;
  }

  // ------------------------------------------------------------------ bounds and losses

  /**
   * {@code accept-timeout}: the attempt's replica is most likely being restarted (sharding holds
   * the request until its model is loaded). When another replica can take it, the attempt is
   * cancelled and the request moves there like a lost one; otherwise it keeps waiting.
   */
  private Behavior<Command> onUnacknowledged(Attempt a, Loss loss) {
    replicas.unacknowledged(a.replica().entityId());
    Set<String> skip = new HashSet<>(avoid);
    skip.add(a.replica().entityId());
    Optional<Replica> other = replicas.next(skip);
    if (other.isEmpty() || skip.contains(other.get().entityId())) return Behaviors.same();
    String why =
        a.replica().entityId()
            + " did not acknowledge it within "
            + seconds(settings.acceptTimeout());
    return lose(a, null, why, true, other.get(), loss);
  }

  /** {@code attempt-timeout}: nothing took a first request in time; a continuation is lost. */
  private Behavior<Command> onGiveUp(Attempt a, Loss loss) {
    if (!everAccepted) return finish(a, "No model worker answered in time; retry later.");
    String why =
        a.replica().entityId() + " did not answer within " + seconds(settings.attemptTimeout());
    return lose(a, null, why, true, null, loss);
  }

  /**
   * {@code deadline} from the owner's start and no worker has accepted the request: a 503 naming
   * why, before the client's first byte, rather than a wait no connection or client timeout is sure
   * to outlast.
   *
   * @param a the attempt waiting now, or null while no replica is reachable
   */
  private Behavior<Command> onNotStarted(Attempt a, Loss loss) {
    String lastLoss = loss == null ? null : loss.why();
    String why =
        a == null
            ? "no replica of model `"
                + replicas.model()
                + "` could take it"
                + (lastLoss == null ? "" : "; last loss: " + lastLoss)
            : a.replica().entityId()
                + " has not acknowledged it"
                + (lastLoss == null ? "" : "; it moved there after: " + lastLoss);
    ctx.getLog()
        .info(
            "request {} not started within {}: {}",
            request.requestId(),
            seconds(settings.deadline()),
            why);
    return finish(
        a,
        "No model worker started this request within "
            + seconds(settings.deadline())
            + " ("
            + why
            + "); retry later.");
  }

  /** A node was lost: the request moves when its attempt's worker was there. */
  private Behavior<Command> onNodeLost(
      Attempt a, ActorRef<ModelWorkerProtocol.Command> worker, Loss loss, NodeLost lost) {
    Address where =
        worker != null ? worker.path().address() : replicas.lastSeenAt(a.replica().entityId());
    return lost.address().equals(where)
        ? lose(a, worker, lost.reason(), true, null, loss)
        : Behaviors.same();
  }

  /**
   * Attempt {@code a} is lost: resume the request on {@code next} (null: a replica chosen now),
   * within the bounds.
   *
   * @param worker its watched worker, or null
   * @param mayStillRun the worker may only be cut off: cancel it, in case it comes back
   * @param loss the loss the request was already under, or null
   */
  private Behavior<Command> lose(
      Attempt a,
      ActorRef<ModelWorkerProtocol.Command> worker,
      String why,
      boolean mayStillRun,
      Replica next,
      Loss loss) {
    if (mayStillRun) a.replica().ref().tell(new Cancel(a.id()));
    if (worker != null) ctx.unwatch(worker);
    timers.cancel(Timer.MOVE);
    timers.cancel(Timer.GIVE_UP);
    avoid.add(a.replica().entityId());
    Loss now = loss == null ? new Loss(System.nanoTime(), why) : loss.then(why);
    if (!settings.enabled())
      return finish(
          null, "The model worker generating this request was lost (" + why + "); retry.");
    if (++migrations > settings.maxMigrations())
      return finish(
          null,
          gaveUp(now, "it has already moved " + settings.maxMigrations() + " times; retry later."));
    ctx.getLog().info("request {}: worker lost ({}), migrating", request.requestId(), why);
    return next == null ? submit(now) : send(next, now);
  }

  private static String gaveUp(Loss loss, String tail) {
    return "The model worker generating this request was lost (" + loss.why() + ") and " + tail;
  }

  // ------------------------------------------------------------------ the end

  private Behavior<Command> cancelled(Attempt current) {
    if (current != null) current.replica().ref().tell(new Cancel(current.id()));
    return Behaviors.stopped();
  }

  /**
   * Ends the request with a 503: an error event on a stream, the status otherwise.
   *
   * @param current the attempt to cancel, or null
   */
  private Behavior<Command> finish(Attempt current, String message) {
    if (current != null) current.replica().ref().tell(new Cancel(current.id()));
    out.tell(new Failed(request.requestId(), ErrorKind.OVERLOADED, message, null));
    return Behaviors.stopped();
  }

  private Behavior<Command> unsubscribe() {
    ctx.getSystem().eventStream().tell(new EventStream.Unsubscribe<>(nodeLost));
    return Behaviors.same();
  }

  private static String seconds(Duration d) {
    return d.toMillis() % 1000 == 0 ? d.toSeconds() + " s" : d.toMillis() + " ms";
  }
}
