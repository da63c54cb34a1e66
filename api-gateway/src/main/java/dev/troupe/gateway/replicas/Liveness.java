package dev.troupe.gateway.replicas;

import dev.troupe.protocol.cluster.ModelWorkerProtocol;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.cluster.Member;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;

/**
 * Which model replicas this gateway can reach now: the {@link ReplicaSelector}'s filter before any
 * replica choice, and the source of the gateway's "worker lost" signal.
 *
 * <p>A replica's node is learnt from its worker's actor reference, which every request's first
 * event carries ({@link #located}). A replica whose node is unreachable or being downed is {@link
 * State#DOWN}: no request goes there, so new requests during an outage go to live replicas at once
 * instead of waiting for the Split Brain Resolver. Once that node has left the cluster the replica
 * is being restarted elsewhere (remember-entities): {@link State#RESTARTING}, as is a replica that
 * did not acknowledge a request in time ({@link #unacknowledged}). A restarting replica holds what
 * is sent to it (sharding's buffer, then the model load) for tens of seconds, so it is chosen only
 * when no other replica is reachable ({@link #tiers}); it is {@link State#LIVE} again once it
 * acknowledges a request ({@link #located}) or answers a status probe ({@link #confirmed}). A
 * replica never seen is {@link State#UNKNOWN}, chosen like a live one.
 *
 * <p>The {@link LivenessWatcher} subscribed to cluster membership and reachability publishes {@link
 * NodeLost} on the system's event stream the moment a node becomes unreachable or is downed or
 * removed; requests in flight on that node listen for it (and watch their worker's actor).
 *
 * <p>Thread-safe: reads the cluster's current state, which Pekko keeps up to date.
 */
final class Liveness {

  /** What this gateway knows of a replica's reachability. */
  enum State {
    /** On a reachable member that is up. */
    LIVE,
    /** Not seen yet (never lost): chosen like a live one. */
    UNKNOWN,
    /**
     * Lost since it last acknowledged: its node left and it is being restarted elsewhere, or it did
     * not acknowledge a request in time. Chosen only when no live or unknown replica is reachable.
     */
    RESTARTING,
    /** On a node that is unreachable, downed or leaving without handing off yet: avoid. */
    DOWN
  }

  private final Cluster cluster; // null: no cluster (tests, a single JVM without remoting)
  private final Map<String, Address> located = new ConcurrentHashMap<>();
  private final Set<String> restarting = ConcurrentHashMap.newKeySet();

  private Liveness(Cluster cluster) {
    this.cluster = cluster;
  }

  /**
   * Liveness from {@code system}'s cluster membership; starts the watcher that publishes losses.
   */
  static Liveness start(ActorSystem<?> system) {
    Liveness liveness = new Liveness(Cluster.get(system));
    system.systemActorOf(LivenessWatcher.create(liveness), "replica-liveness", Props.empty());
    return liveness;
  }

  /** Every replica is assumed reachable (no cluster: tests, embedded gateways). */
  static Liveness assumeAllLive() {
    return new Liveness(null);
  }

  /**
   * Replica {@code entityId} runs in {@code worker}'s node (from an {@code Accepted}/{@code
   * Started}).
   */
  void located(String entityId, ActorRef<?> worker) {
    if (worker == null) return;
    Address a = worker.path().address();
    located.put(entityId, a.hasGlobalScope() || cluster == null ? a : selfAddress());
    restarting.remove(entityId);
  }

  /** Replica {@code entityId} answered a status probe: it runs again (where is not known yet). */
  void confirmed(String entityId) {
    restarting.remove(entityId);
  }

  /**
   * Replica {@code entityId} did not acknowledge a request in time: prefer other replicas until it
   * acknowledges one or answers a probe.
   */
  void unacknowledged(String entityId) {
    restarting.add(entityId);
  }

  /** The node replica {@code entityId} was last seen on, or null. */
  Address location(String entityId) {
    return located.get(entityId);
  }

  /** Where replica {@code entityId} stands now. */
  State state(String entityId) {
    Address a = located.get(entityId);
    if (a != null && cluster != null) {
      if (!reachable(a)) return State.DOWN;
      Member m = member(a);
      if (m == null) {
        forget(entityId, a); // its node left: the replica restarts elsewhere
        a = null;
      } else {
        MemberStatus s = m.status();
        if (s == MemberStatus.down()) return State.DOWN;
        if (s != MemberStatus.up() && s != MemberStatus.weaklyUp() && s != MemberStatus.joining())
          restarting.add(entityId); // leaving or exiting: its shards are handed off
      }
    }
    if (restarting.contains(entityId)) return State.RESTARTING;
    return a == null ? State.UNKNOWN : State.LIVE;
  }

  /**
   * The replicas of {@code model} (indices 0 … {@code replicas}-1) a request may go to now, best
   * first: every one not {@link State#DOWN}, in two tiers — {@link State#LIVE} then {@link
   * State#UNKNOWN} replicas, then {@link State#RESTARTING} ones — each in index order. Empty when
   * none is reachable.
   */
  List<List<Integer>> tiers(String model, int replicas) {
    List<Integer> live = new ArrayList<>(replicas);
    List<Integer> unknown = new ArrayList<>();
    List<Integer> restarting = new ArrayList<>();
    for (int i = 0; i < replicas; i++) {
      switch (state(ModelWorkerProtocol.entityId(model, i))) {
        case LIVE -> live.add(i);
        case UNKNOWN -> unknown.add(i);
        case RESTARTING -> restarting.add(i);
        case DOWN -> {}
      }
    }
    live.addAll(unknown);
    List<List<Integer>> tiers = new ArrayList<>(2);
    if (!live.isEmpty()) tiers.add(live);
    if (!restarting.isEmpty()) tiers.add(restarting);
    return tiers;
  }

  /** The entity ids of {@code model}'s replicas that are {@link State#RESTARTING} now. */
  List<String> restarting(String model, int replicas) {
    List<String> out = new ArrayList<>();
    for (int i = 0; i < replicas; i++) {
      String id = ModelWorkerProtocol.entityId(model, i);
      if (restarting.contains(id) && state(id) == State.RESTARTING) out.add(id);
    }
    return out;
  }

  /** False while {@code address} is marked unreachable, or is downed or removed. */
  boolean reachable(Address address) {
    if (cluster == null || address == null) return true;
    var state = cluster.state();
    for (Member m : state.getUnreachable()) if (m.address().equals(address)) return false;
    Member m = member(address);
    return m == null || m.status() != MemberStatus.down();
  }

  /**
   * Replicas located on {@code address} are being restarted elsewhere once it has left the cluster:
   * their location is forgotten and they count as {@link State#RESTARTING} until they answer again.
   */
  void removed(Address address) {
    for (var e : located.entrySet()) if (address.equals(e.getValue())) forget(e.getKey(), address);
  }

  private void forget(String entityId, Address where) {
    if (located.remove(entityId, where)) restarting.add(entityId);
  }

  private Member member(Address address) {
    for (Member m : cluster.state().getMembers()) if (m.address().equals(address)) return m;
    return null;
  }

  private Address selfAddress() {
    return cluster.selfMember().address();
  }
}
