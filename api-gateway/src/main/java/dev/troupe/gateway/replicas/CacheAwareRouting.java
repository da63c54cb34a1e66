package dev.troupe.gateway.replicas;

import dev.troupe.protocol.kv.CacheReports.ReplicaLoad;

/**
 * Routes a request to the replica where it is cheapest, after Dynamo's KV router: each candidate
 * costs
 *
 * <pre>
 *   overlapWeight × (prompt blocks it would have to prefill) + (its load in blocks)
 *                 + (adapterMissBlocks when the request's adapter is not loaded there)
 * </pre>
 *
 * and the cheapest wins (ties: fewer of this gateway's requests in flight there, then the lower
 * index). Blocks to prefill are the prompt's blocks minus the leading ones the replica reported
 * cached, and at least the block holding the last prompt token (vLLM always computes it). Load is
 * the larger of this gateway's own count (prompt blocks of its requests in flight there: exact and
 * immediate, so a burst spreads out instead of piling onto the replica with the hit) and the
 * replica's last report (KV blocks held plus blocks its waiting requests must still prefill: sees
 * other gateways' requests, lags by a publish interval). A replica without a fresh report counts as
 * holding nothing and reporting no load. With no prompt known (no chain) it is least-loaded.
 */
final class CacheAwareRouting {
  private final RoutingTable table;
  private final RoutingSettings settings;

  CacheAwareRouting(RoutingTable table, RoutingSettings settings) {
    this.table = table;
    this.settings = settings;
  }

  /** The replica for {@code request}, among {@link RouteRequest#candidates()}, and why. */
  RouteDecision choose(RouteRequest request) {
    long now = table.now();
    long stale = settings.staleAfter().toNanos();
    int n = request.candidates().size();
    int[] cached = new int[n];
    double[] cost = new double[n];
    double[] costIgnoringAdapter = new double[n];
    int[] inFlight = new int[n];
    int blockSize = 0;
    for (int i = 0; i < n; i++) {
      RoutingTable.View v = table.view(request.model(), request.candidates().get(i));
      if (v.fresh(now, stale) && v.blockSize() > 0) blockSize = v.blockSize();
    }
    long promptBlocks = blockSize == 0 ? 0 : (request.promptTokens() + blockSize - 1) / blockSize;
    // At most the blocks before the one holding the last prompt token can be hits.
    int maxHit = blockSize == 0 ? 0 : Math.max(0, (request.promptTokens() - 1) / blockSize);
    for (int i = 0; i < n; i++) {
      RoutingTable.View v = table.view(request.model(), request.candidates().get(i));
      boolean fresh = v.fresh(now, stale);
      ReplicaLoad load = fresh ? v.load() : null;
      cached[i] = fresh ? Math.min(v.cachedBlocks(request.chain()), maxHit) : 0;
      long reported =
          load == null
              ? 0
              : load.kvBlocksUsed() + (blockSize == 0 ? 0 : load.waitingTokens() / blockSize);
      long loadBlocks = Math.max(v.inFlightBlocks(), reported);
      costIgnoringAdapter[i] = settings.overlapWeight() * (promptBlocks - cached[i]) + loadBlocks;
      boolean adapterMissing =
          request.adapterKey() != null
              && (load == null || !load.adapters().contains(request.adapterKey()));
      cost[i] = costIgnoringAdapter[i] + (adapterMissing ? settings.adapterMissBlocks() : 0);
      inFlight[i] = v.inFlight();
    }
    int pick = cheapest(cost, inFlight, request);
    int best = 0;
    for (int c : cached) best = Math.max(best, c);
    String reason;
    if (best > 0) {
      reason = cached[pick] == best ? RouteDecision.PREFIX : RouteDecision.LOAD;
    } else if (request.adapterKey() != null
        && cheapest(costIgnoringAdapter, inFlight, request) != pick) {
      reason = RouteDecision.ADAPTER;
    } else {
      reason = RouteDecision.LEAST_LOADED;
    }
    return new RouteDecision(
        request.candidates().get(pick), reason, cached[pick] * blockSize, best * blockSize);
  }

  private static int cheapest(double[] cost, int[] inFlight, RouteRequest request) {
    int pick = 0;
    for (int i = 1; i < cost.length; i++) {
      int c = Double.compare(cost[i], cost[pick]);
      if (c == 0) c = Integer.compare(inFlight[i], inFlight[pick]);
      if (c == 0) c = Integer.compare(request.candidates().get(i), request.candidates().get(pick));
      if (c < 0) pick = i;
    }
    return pick;
  }
}
