package dev.troupe.gateway.chat;

import dev.troupe.gateway.liveness.ReplicaLiveness;
import java.time.Duration;
import org.apache.pekko.actor.typed.ActorSystem;

/**
 * Everything a generation needs to reach, watch and replace its model's workers.
 *
 * @param system where the request's owner actor runs
 * @param picker chooses a reachable replica (first, and after a loss)
 * @param liveness which nodes are reachable, and where replicas were last seen
 * @param acceptTimeout how long a replica may take to acknowledge a request before it counts as
 *     lost (the gateway's ask timeout; an attempt moves earlier, after the migration's own accept
 *     timeout, when another replica can take it)
 * @param migration what happens when the worker is lost
 */
public record Replicas(
    ActorSystem<?> system,
    ReplicaPicker picker,
    ReplicaLiveness liveness,
    Duration acceptTimeout,
    MigrationSettings migration) {}
