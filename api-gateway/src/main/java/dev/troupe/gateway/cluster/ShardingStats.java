package dev.troupe.gateway.cluster;

import dev.troupe.gateway.http.Stages;
import dev.troupe.protocol.api.cluster.ClusterResponse;
import dev.troupe.protocol.cluster.ClusterViewProtocol;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.cluster.sharding.ClusterSharding;
import org.apache.pekko.cluster.sharding.ShardRegion;
import org.apache.pekko.pattern.Patterns;
import scala.concurrent.duration.FiniteDuration;

/**
 * Shard regions and their entity counts per node, cluster-wide, for every entity type this node
 * knows (it hosts them, or runs a proxy for them): Pekko's {@code GetClusterShardingStats}, which
 * the type's coordinator answers by asking every region. Entity ids are not listed (a cluster-wide
 * list of every entity is what Akka's maintainers refused to provide; replicas are named by the
 * node reports instead).
 */
final class ShardingStats {
  private ShardingStats() {}

  static CompletionStage<List<ClusterResponse.ShardType>> all(
      ActorSystem<?> system, Duration timeout) {
    ClusterSharding sharding = ClusterSharding.get(Adapter.toClassic(system));
    List<CompletableFuture<ClusterResponse.ShardType>> types = new ArrayList<>();
    for (String type : new TreeSet<>(sharding.getShardTypeNames()))
      types.add(of(system, sharding, type, timeout).toCompletableFuture());
    return CompletableFuture.allOf(types.toArray(CompletableFuture[]::new))
        .thenApply(done -> types.stream().map(CompletableFuture::join).toList());
  }

  private static CompletionStage<ClusterResponse.ShardType> of(
      ActorSystem<?> system, ClusterSharding sharding, String type, Duration timeout) {
    // The coordinator waits up to the given time for the regions; the ask a little longer.
    FiniteDuration wait = FiniteDuration.create(timeout.toMillis() * 3 / 4, "ms");
    return Stages.on(
            system,
            Patterns.ask(
                sharding.shardRegion(type), new ShardRegion.GetClusterShardingStats(wait), timeout))
        .handle(
            (reply, error) -> {
              if (error != null || !(reply instanceof ShardRegion.ClusterShardingStats stats))
                return new ClusterResponse.ShardType(
                    type,
                    List.of(),
                    List.of(
                        "its coordinator did not answer within " + ClusterView.seconds(timeout)));
              List<ClusterResponse.Region> regions = new ArrayList<>();
              List<String> failed = new ArrayList<>();
              for (Map.Entry<Address, ShardRegion.ShardRegionStats> e :
                  stats.getRegions().entrySet()) {
                String node = ClusterViewProtocol.nodeName(e.getKey());
                int entities = 0;
                for (Object n : e.getValue().getStats().values())
                  entities += ((Number) n).intValue();
                regions.add(
                    new ClusterResponse.Region(node, e.getValue().getStats().size(), entities));
                if (!e.getValue().getFailed().isEmpty())
                  failed.add(node + " (shards " + new TreeSet<>(e.getValue().getFailed()) + ")");
              }
              regions.sort(java.util.Comparator.comparing(ClusterResponse.Region::node));
              return new ClusterResponse.ShardType(type, regions, failed);
            });
  }
}
