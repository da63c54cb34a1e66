package dev.troupe.gateway.routing;

/** Where routing decisions are counted ({@code troupe:routing_decisions_total} in /metrics). */
@FunctionalInterface
public interface RouteRecorder {

  /** {@code model}'s replica {@code replica} was chosen for {@code reason}. */
  void routed(String model, int replica, String reason);

  /** Counts nothing. */
  RouteRecorder NONE = (model, replica, reason) -> {};
}
