package dev.troupe.worker;

import org.apache.pekko.actor.NoSerializationVerificationNeeded;
import org.apache.pekko.actor.typed.ActorRef;

/**
 * The node is shutting down (its Coordinated Shutdown, e.g. on SIGTERM): the replica takes no new
 * request — a {@code Generate} is answered {@code Migrate} at once, so the gateway sends it to
 * another replica — lets the ones in flight finish, and answers {@code replyTo} when none is left.
 * Whatever is still running when the node's drain bound passes migrates with the hand-off that
 * follows ({@link HandOff}). Node-local, never sent over the network.
 */
public record Drain(ActorRef<Drained> replyTo)
    implements dev.troupe.protocol.cluster.ModelWorkerProtocol.Command,
        NoSerializationVerificationNeeded {

  /** The replica has no request in flight any more. */
  public record Drained(String entityId) implements NoSerializationVerificationNeeded {}
}
