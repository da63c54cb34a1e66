package dev.troupe.gateway.replicas;

import org.apache.pekko.actor.Address;

/**
 * A cluster node this gateway lost: unreachable, downed or removed. Published on the actor system's
 * event stream by the gateway's one cluster subscriber ({@code LivenessWatcher}); the owners of
 * requests in flight there listen for it and move their requests.
 *
 * @param reason what happened, for logs and error messages
 */
public record NodeLost(Address address, String reason) {}
