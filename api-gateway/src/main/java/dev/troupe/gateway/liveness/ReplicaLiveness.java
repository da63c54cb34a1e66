package dev.troupe.gateway.liveness;

import dev.troupe.protocol.cluster.ModelWorkerProtocol;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.cluster.Member;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;

/**
 * Which model replicas this gateway can reach now: the filter applied before any replica choice
 * (round-robin, cache-aware routing) and the source of the gateway's "worker lost" signal.
 *
 * <p>A replica's node is learnt from its worker's actor reference, which every request's first
 * event carries ({@link #located}). A replica whose node is unreachable or being downed is {@link
 * State#DOWN}: no request goes there, so new requests during an outage go to live replicas at once
 * instead of waiting for the Split Brain Resolver. Once that node has left the cluster the replica
 * is being restarted elsewhere (remember-entities), so its location is forgotten: {@link
 * State#UNKNOWN}, usable (messages wait in sharding's buffer until it is back). A replica never
 * seen is {@link State#UNKNOWN} too.
 *
 * <p>The {@link LivenessWatcher} subscribed to cluster membership and reachability publishes {@link
 * NodeLost} on the system's event stream the moment a node becomes unreachable or is downed or
 * removed; requests in flight on that node listen for it (and watch their worker's actor).
 *
 * <p>Thread-safe: reads the cluster's current state, which Pekko keeps up to date.
 */
public final class ReplicaLiveness {

  /** What this gateway knows of a replica's reachability. */
  public enum State {
    /** On a reachable member that is up. */
    LIVE,
    /** Not seen yet, or its node left and it is being restarted elsewhere: usable. */
    UNKNOWN,
    /** On a node that is unreachable, downed or leaving without handing off yet: avoid. */
    DOWN
  }

  /**
   * A cluster node this gateway lost: unreachable, downed or removed. Published on the actor
   * system's event stream by the {@link LivenessWatcher}.
   *
   * @param reason what happened, for logs and error messages
   */
  public record NodeLost(Address address, String reason) {}

  private final Cluster cluster; // null: no cluster (tests, a single JVM without remoting)
  private final Map<String, Address> located = new ConcurrentHashMap<>();

  private ReplicaLiveness(Cluster cluster) {
    this.cluster = cluster;
  }

  /**
   * Liveness from {@code system}'s cluster membership; starts the watcher that publishes losses.
   */
  public static ReplicaLiveness start(ActorSystem<?> system) {
    ReplicaLiveness liveness = new ReplicaLiveness(Cluster.get(system));
    system.systemActorOf(LivenessWatcher.create(liveness), "replica-liveness", Props.empty());
    return liveness;
  }

  /** Every replica is assumed reachable (no cluster: tests, embedded gateways). */
  public static ReplicaLiveness assumeAllLive() {
    return new ReplicaLiveness(null);
  }

  /**
   * Replica {@code entityId} runs in {@code worker}'s node (from an {@code Accepted}/{@code
   * Started}).
   */
  public void located(String entityId, ActorRef<?> worker) {
    if (worker == null) return;
    Address a = worker.path().address();
    located.put(entityId, a.hasGlobalScope() || cluster == null ? a : selfAddress());
  }

  /** The node replica {@code entityId} was last seen on, or null. */
  public Address location(String entityId) {
    return located.get(entityId);
  }

  /** Where replica {@code entityId} stands now. */
  public State state(String entityId) {
    Address a = located.get(entityId);
    if (a == null || cluster == null) return a == null ? State.UNKNOWN : State.LIVE;
    if (!reachable(a)) return State.DOWN;
    Member m = member(a);
    if (m == null) {
      located.remove(entityId, a); // its node left: the replica restarts elsewhere
      return State.UNKNOWN;
    }
    MemberStatus s = m.status();
    if (s == MemberStatus.up() || s == MemberStatus.weaklyUp() || s == MemberStatus.joining())
      return State.LIVE;
    if (s == MemberStatus.down()) return State.DOWN;
    return State.UNKNOWN; // leaving or exiting: its shards are handed off
  }

  /**
   * The replicas of {@code model} (indices 0 … {@code replicas}-1) a request may go to now: every
   * one not {@link State#DOWN}, live ones first, each group in index order. Empty when none is
   * reachable. Routing strategies choose among these.
   */
  public List<Integer> candidates(String model, int replicas) {
    List<Integer> live = new ArrayList<>(replicas);
    List<Integer> unknown = new ArrayList<>();
    for (int i = 0; i < replicas; i++) {
      switch (state(ModelWorkerProtocol.entityId(model, i))) {
        case LIVE -> live.add(i);
        case UNKNOWN -> unknown.add(i);
        case DOWN -> {}
      }
    }
    live.addAll(unknown);
    return live;
  }

  /** False while {@code address} is marked unreachable, or is downed or removed. */
  public boolean reachable(Address address) {
    if (cluster == null || address == null) return true;
    var state = cluster.state();
    for (Member m : state.getUnreachable()) if (m.address().equals(address)) return false;
    Member m = member(address);
    return m == null || m.status() != MemberStatus.down();
  }

  /** Forgets replicas located on {@code address} once it has left the cluster. */
  void removed(Address address) {
    located.values().removeIf(address::equals);
  }

  private Member member(Address address) {
    for (Member m : cluster.state().getMembers()) if (m.address().equals(address)) return m;
    return null;
  }

  private Address selfAddress() {
    return cluster.selfMember().address();
  }
}
