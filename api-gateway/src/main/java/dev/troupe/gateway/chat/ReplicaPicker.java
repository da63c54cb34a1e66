package dev.troupe.gateway.chat;

import dev.troupe.protocol.cluster.ModelWorkerProtocol.Command;
import java.util.Optional;
import java.util.Set;
import org.apache.pekko.actor.typed.RecipientRef;

/**
 * Chooses the replica of one model that a generation (or its continuation after a lost worker) goes
 * to. Implementations apply the gateway's liveness filter first (never a replica on an unreachable
 * node), then their own preference (round-robin, cache-aware routing).
 */
public interface ReplicaPicker {

  /** The model's name, for error messages. */
  String model();

  /**
   * A reachable replica, preferring those not in {@code avoid} (replicas this request already lost
   * or left); one in {@code avoid} only when no other is reachable. Empty when no replica of the
   * model is reachable now.
   */
  Optional<Replica> pick(Set<String> avoid);

  /**
   * A replica and how to reach it.
   *
   * @param entityId {@code model#replica}
   */
  record Replica(String entityId, RecipientRef<Command> ref) {}
}
