package dev.troupe.worker;

import dev.troupe.protocol.cluster.ModelWorkerProtocol.Command;
import org.apache.pekko.actor.NoSerializationVerificationNeeded;

/**
 * Cluster Sharding's stop message for a model worker ({@code Entity.withStopMessage}): sent when
 * its shard is handed off to another node (a rebalance onto a rejoining node, a node leaving). The
 * worker tells each requester to {@code Migrate} — the gateway resumes the request on another
 * replica with what it already has — then stops, so no in-flight generation is aborted.
 */
public enum HandOff implements Command, NoSerializationVerificationNeeded {
  INSTANCE
}
