package dev.troupe.gateway.routing;

import dev.troupe.gateway.metrics.ServingMetrics;
import dev.troupe.protocol.kv.BlockHash;
import dev.troupe.protocol.kv.BlockHasher;
import java.util.Collection;
import java.util.List;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Props;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The gateway's replica choice: a {@link RoutingStrategy} over the {@link RoutingTable}, fed by one
 * {@link CacheReportSubscriber} per model. Computes the request's block-hash chain from its prompt
 * token ids (with the replicas' block size, the adapter and the salt, as the workers do), decides,
 * counts the request in flight until its lease is closed, and records the decision (metric, DEBUG
 * log). Thread-safe.
 */
public final class ReplicaRouter {
  private static final Logger log = LoggerFactory.getLogger(ReplicaRouter.class);
  private static final ThreadLocal<BlockHasher> HASHER = ThreadLocal.withInitial(BlockHasher::new);
  private final RoutingTable table;
  private final RoutingStrategy strategy;
  private final RoutingSettings settings;
  private final ServingMetrics metrics;

  public ReplicaRouter(
      RoutingTable table,
      RoutingStrategy strategy,
      RoutingSettings settings,
      ServingMetrics metrics) {
    this.table = table;
    this.strategy = strategy;
    this.settings = settings;
    this.metrics = metrics;
  }

  /**
   * A router for {@code models}: cache-aware (subscribing to their cache reports on {@code system})
   * or round-robin, as {@code settings} say.
   */
  public static ReplicaRouter start(
      ActorSystem<?> system,
      Collection<String> models,
      RoutingSettings settings,
      ServingMetrics metrics) {
    RoutingTable table = new RoutingTable();
    if (!settings.cacheAware())
      return new ReplicaRouter(table, new RoundRobinRouting(), settings, metrics);
    int i = 0;
    for (String model : models)
      system.systemActorOf(
          CacheReportSubscriber.create(model, table, settings),
          "prefix-cache-reports-" + i++,
          Props.empty());
    return new ReplicaRouter(table, new CacheAwareRouting(table, settings), settings, metrics);
  }

  public RoutingSettings settings() {
    return settings;
  }

  public RoutingTable table() {
    return table;
  }

  /**
   * Chooses a replica and counts the request there until {@link Routed#lease()} is closed (close it
   * when the request ends, however it ends).
   *
   * @param candidates replica indices the request may go to
   * @param promptTokens the prompt's token ids, or null when not known (then load decides)
   * @param adapterKey the identity of the request's trained checkpoint, or null
   * @param salt the request's {@code cache_salt}, or null
   */
  public Routed route(
      String model, List<Integer> candidates, int[] promptTokens, String adapterKey, String salt) {
    int blockSize = table.blockSize(model);
    List<BlockHash> chain =
        promptTokens == null || blockSize == 0
            ? List.of()
            : HASHER.get().chain(promptTokens, blockSize, adapterKey, salt);
    int length = promptTokens == null ? 0 : promptTokens.length;
    RouteDecision decision =
        strategy.choose(new RouteRequest(model, candidates, chain, length, adapterKey));
    long promptBlocks = blockSize == 0 ? 0 : (length + blockSize - 1) / blockSize;
    ReplicaView.Lease lease = table.started(model, decision.replica(), promptBlocks);
    metrics.routed(model, decision.replica(), decision.reason());
    if (log.isDebugEnabled())
      log.debug(
          "route {}#{}: {} ({} prompt tokens, {} cached there, best {})",
          model,
          decision.replica(),
          decision.reason(),
          length,
          decision.cachedTokens(),
          decision.bestCachedTokens());
    return new Routed(decision, lease);
  }

  /** A routing decision and the request's hold on the chosen replica's in-flight count. */
  public record Routed(RouteDecision decision, ReplicaView.Lease lease) {}
}
