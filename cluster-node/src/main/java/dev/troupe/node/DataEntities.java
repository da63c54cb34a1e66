package dev.troupe.node;

import dev.troupe.persistence.PersistenceInit;
import dev.troupe.persistence.PersistenceSettings;
import dev.troupe.protocol.cluster.TrainableModelProtocol;
import dev.troupe.protocol.cluster.TrajectoryLogProtocol;
import dev.troupe.registry.ModelRegistry;
import dev.troupe.registry.TrainableModel;
import dev.troupe.trajectory.JdbcTrajectoryStore;
import dev.troupe.trajectory.TrajectoryLog;
import dev.troupe.trajectory.TrajectoryStore;
import java.time.Duration;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Starts the persistent preview entities on a node: {@code TrainableModel}, {@code ModelRegistry},
 * {@code TrajectoryLog} and the {@code TrainingJobIndex}, sharded on role {@code trainer} (nodes
 * without it get proxies). Call after {@link PersistenceInit#ensureSchema} and before the gateway
 * routes are built. Only nodes with the role open a connection pool for the trajectory store.
 */
public final class DataEntities {
  private static final Logger log = LoggerFactory.getLogger(DataEntities.class);

  /** Dispatcher for trajectory logs: their store calls block. */
  public static final String BLOCKING_DISPATCHER = "troupe.persistence.blocking-dispatcher";

  private static final Duration METRICS_TIMEOUT = Duration.ofSeconds(15);

  private DataEntities() {}

  /** Inits the three entity types; the trajectory store closes with the system. */
  public static void init(ActorSystem<?> system, PersistenceSettings settings) {
    ClusterSharding sharding = ClusterSharding.get(system);
    // Only nodes that host trajectory logs open the store's pool; elsewhere the entities are
    // proxies.
    boolean hosts =
        org.apache.pekko.cluster.typed.Cluster.get(system)
            .selfMember()
            .hasRole(TrajectoryLogProtocol.ROLE);
    TrajectoryStore store = hosts ? new JdbcTrajectoryStore(settings) : null;
    if (store != null) system.getWhenTerminated().thenRun(store::close);
    TrainableModel.init(system, settings);
    ModelRegistry.init(system, settings);
    TrajectoryLog.MetricsSink sink =
        (modelId, step, metrics) ->
            sharding
                .entityRefFor(TrainableModelProtocol.TYPE_KEY, modelId)
                .<TrainableModelProtocol.ModelReply>ask(
                    r -> new TrainableModelProtocol.RecordMetrics(step, metrics, r),
                    METRICS_TIMEOUT);
    TrajectoryLog.init(system, store, sink, settings, BLOCKING_DISPATCHER);
    dev.troupe.registry.TrainingJobIndex.init(system, settings);
    log.info("Preview data entities started on {}", settings.backend());
  }
}
