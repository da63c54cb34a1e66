package dev.troupe.gateway.routing;

/**
 * Picks the replica that runs a request. Implementations are thread-safe and never block: they
 * decide from what the gateway already knows ({@link RoutingTable}).
 */
public interface RoutingStrategy {

  /** The replica for {@code request}, among {@link RouteRequest#candidates()}, and why. */
  RouteDecision choose(RouteRequest request);
}
