package dev.troupe.worker;

import dev.troupe.protocol.cluster.ModelWorkerProtocol;
import dev.troupe.protocol.cluster.WorkerStatus;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Extension;
import org.apache.pekko.actor.typed.ExtensionId;
import org.apache.pekko.actor.typed.javadsl.Adapter;

/**
 * What this node's model replicas are doing, for the node's health checks and its drain: each
 * replica hosted here reports itself loading, serving or failed ({@link ModelWorker}), and the node
 * guardian reports which replicas it woke at start and their answers, which the launcher waits for
 * ({@link #replicasStarted()}).
 *
 * <p>{@link #started()} (the startup check): every replica woken at start has answered — wherever
 * sharding placed it — and none hosted here is still loading. {@link #accepting()} (readiness):
 * started, no replica here failed to load, none is loading (a replica moved here by a rebalance
 * loads while the node is up), and the node is not draining.
 *
 * <p>One per actor system (an {@link Extension}); thread-safe: replicas on their pinned threads,
 * the guardian and the health checks on theirs.
 */
public final class WorkerHealth implements Extension {

  /** A replica hosted on this node. */
  public enum State {
    LOADING,
    SERVING,
    /** Its engine failed; it loads again after a back-off. */
    RESTARTING,
    FAILED
  }

  /**
   * A hosted replica's state; {@code reason} says why a failed one cannot serve (or why a
   * restarting one restarts), {@code worker} is a serving one's actor (null otherwise), {@code
   * restarts} counts its restarts after a failure on this node.
   */
  public record Replica(
      State state, String reason, ActorRef<ModelWorkerProtocol.Command> worker, int restarts) {
    public Replica(State state, String reason, ActorRef<ModelWorkerProtocol.Command> worker) {
      this(state, reason, worker, 0);
    }
  }

  private static final ExtensionId<WorkerHealth> ID =
      new ExtensionId<>() {
        @Override
        public WorkerHealth createExtension(ActorSystem<?> system) {
          return new WorkerHealth();
        }
      };

  private final Map<String, Replica> hosted = new ConcurrentHashMap<>();
  private final Map<String, String> failures = new ConcurrentHashMap<>();
  private final Set<String> awaiting = ConcurrentHashMap.newKeySet();
  private final List<WorkerStatus> answered = new ArrayList<>();
  private final CompletableFuture<List<WorkerStatus>> replicasStarted = new CompletableFuture<>();
  private volatile boolean wakeUpsSent;
  private volatile boolean draining;

  private WorkerHealth() {}

  public static WorkerHealth get(ActorSystem<?> system) {
    return system.registerExtension(ID);
  }

  /** For the classic actor system Pekko Management hands its health checks. */
  public static WorkerHealth get(org.apache.pekko.actor.ActorSystem system) {
    return Adapter.toTyped(system).registerExtension(ID);
  }

  // ------------------------------------------------------------------ reported by the replicas

  void loading(String entityId) {
    hosted.compute(entityId, (id, was) -> new Replica(State.LOADING, null, null, restarts(was)));
  }

  void serving(String entityId, ActorRef<ModelWorkerProtocol.Command> worker) {
    hosted.compute(entityId, (id, was) -> new Replica(State.SERVING, null, worker, restarts(was)));
  }

  void failed(String entityId, String reason) {
    hosted.compute(entityId, (id, was) -> new Replica(State.FAILED, reason, null, restarts(was)));
  }

  /**
   * The replica's engine failed ({@code reason}): it restarts, and loads again after a back-off.
   */
  void restarting(String entityId, String reason) {
    hosted.compute(
        entityId, (id, was) -> new Replica(State.RESTARTING, reason, null, restarts(was) + 1));
  }

  /** Why the replica's engine failed, kept until it restarts ({@link #restarting}). */
  void failing(String entityId, String reason) {
    failures.put(entityId, reason);
  }

  /** The reason {@link #failing} left for the replica's restart, consumed. */
  String failure(String entityId) {
    return failures.remove(entityId);
  }

  private static int restarts(Replica was) {
    return was == null ? 0 : was.restarts();
  }

  /** The replica stopped here (handed off, passivated, the node stopping). */
  void stopped(String entityId) {
    hosted.remove(entityId);
  }

  // ------------------------------------------------------------------ reported by the guardian

  /**
   * The guardian woke these replicas at start (none on a node that wakes none); {@link #started()}
   * and {@link #replicasStarted()} wait for their answers.
   */
  public void wakingUp(Set<String> entityIds) {
    awaiting.addAll(entityIds);
    wakeUpsSent = true;
    if (entityIds.isEmpty()) replicasStarted.complete(List.of());
  }

  /** A replica answered its wake-up (loaded or not: a failed one answers too). */
  public void wokeUp(WorkerStatus status) {
    synchronized (answered) {
      if (!awaiting.remove(status.entityId())) return;
      answered.add(status);
      if (awaiting.isEmpty()) replicasStarted.complete(List.copyOf(answered));
    }
  }

  /**
   * Every replica woken at start, once each has answered (loaded, or failed to: the reason is in
   * {@link WorkerStatus#unavailable()}); empty on a node that wakes none.
   */
  public CompletionStage<List<WorkerStatus>> replicasStarted() {
    return replicasStarted;
  }

  // ------------------------------------------------------------------ read by health and drain

  /** The replicas hosted here now, by entity id. */
  public Map<String, Replica> hosted() {
    return Map.copyOf(hosted);
  }

  /**
   * Start-up is over: the wake-ups were sent and answered, and no replica here is loading. A
   * replica that failed to load counts as started (the node cannot become ready: {@link
   * #accepting()}).
   */
  public boolean started() {
    if (!wakeUpsSent || !awaiting.isEmpty()) return false;
    for (Replica r : hosted.values())
      if (r.state() == State.LOADING || r.state() == State.RESTARTING) return false;
    return true;
  }

  /** Started, every replica here serving, and not draining: new requests are welcome. */
  public boolean accepting() {
    if (draining || !started()) return false;
    for (Replica r : hosted.values()) if (r.state() != State.SERVING) return false;
    return true;
  }

  /** Why this node is not accepting, for logs and probes; null when it is. */
  public String notAcceptingBecause() {
    if (draining) return "draining";
    if (!wakeUpsSent) return "replicas not woken yet";
    if (!awaiting.isEmpty()) return "waiting for replicas " + awaiting;
    for (var e : hosted.entrySet())
      switch (e.getValue().state()) {
        case LOADING -> {
          return e.getKey() + " is loading";
        }
        case FAILED -> {
          return e.getKey() + " failed: " + e.getValue().reason();
        }
        case RESTARTING -> {
          return e.getKey() + " is restarting: " + e.getValue().reason();
        }
        case SERVING -> {}
      }
    return null;
  }

  /** From now on this node is draining: not accepting, whatever its replicas say. */
  public void drain() {
    draining = true;
  }

  public boolean draining() {
    return draining;
  }
}
