package dev.troupe.gateway.routing;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Candidates in turn, per model; ignores caches and load ({@code routing.policy = round-robin}).
 */
public final class RoundRobinRouting implements RoutingStrategy {
  private final Map<String, AtomicInteger> next = new ConcurrentHashMap<>();

  @Override
  public RouteDecision choose(RouteRequest request) {
    int turn = next.computeIfAbsent(request.model(), m -> new AtomicInteger()).getAndIncrement();
    int replica = request.candidates().get(Math.floorMod(turn, request.candidates().size()));
    return new RouteDecision(replica, RouteDecision.ROUND_ROBIN, 0, 0);
  }
}
