package dev.troupe.node;

import dev.troupe.protocol.cluster.ModelWorkerProtocol;
import dev.troupe.protocol.cluster.ServedModels.ServedModel;
import dev.troupe.protocol.cluster.WorkerStatus;
import dev.troupe.worker.EngineProvider;
import dev.troupe.worker.HandOff;
import dev.troupe.worker.ModelWorker;
import dev.troupe.worker.WorkerHealth;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;
import org.apache.pekko.cluster.sharding.typed.ClusterShardingSettings;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.sharding.typed.javadsl.Entity;
import org.apache.pekko.cluster.typed.Cluster;

/**
 * The node's guardian for the inference side: initialises Cluster Sharding for {@code ModelWorker}
 * (hosting entities on nodes with role {@code worker}, a proxy elsewhere — gateway-only nodes), and
 * on worker nodes wakes every configured replica so models are loaded before the first request, and
 * tells its starter once every replica has answered (loaded, or failed to). With remember-entities
 * the replicas of a node that leaves are restarted on the others.
 *
 * <p>Other entity types (training, trajectories, registry) are initialised by their owners.
 */
public final class NodeGuardian extends AbstractBehavior<NodeGuardian.Command> {

  /** Messages of the guardian. */
  public interface Command {}

  /** A replica answered its wake-up. */
  private record ReplicaUp(WorkerStatus status) implements Command {}

  /**
   * @param engines opens each replica's engine (the real loader, or small engines in tests)
   */
  public static Behavior<Command> create(NodeSettings settings, EngineProvider engines) {
    return create(settings, engines, new CompletableFuture<>());
  }

  /**
   * @param started completed with every configured replica's first status once all have answered (a
   *     replica whose model did not load says why in {@link WorkerStatus#unavailable()}); at once
   *     with none on a node that wakes no replicas (no worker role)
   */
  public static Behavior<Command> create(
      NodeSettings settings,
      EngineProvider engines,
      CompletableFuture<List<WorkerStatus>> started) {
    return Behaviors.setup(ctx -> new NodeGuardian(ctx, settings, engines, started));
  }

  /** Initialises ModelWorker sharding on this node (entity host or proxy, by role). */
  public static void initSharding(
      org.apache.pekko.actor.typed.ActorSystem<?> system,
      NodeSettings settings,
      EngineProvider engines) {
    ClusterSharding.get(system)
        .init(
            Entity.of(
                    ModelWorkerProtocol.TYPE_KEY,
                    entity ->
                        ModelWorker.create(
                            entity.getEntityId(),
                            settings.models(),
                            engines,
                            settings.metricsLogInterval()))
                .withRole(ModelWorkerProtocol.ROLE)
                // On hand-off in-flight requests migrate instead of being aborted.
                .withStopMessage(HandOff.INSTANCE)
                .withSettings(ClusterShardingSettings.create(system).withRememberEntities(true))
                .withEntityProps(DispatcherSelector.fromConfig(NodeSettings.WORKER_DISPATCHER)));
  }

  private final CompletableFuture<List<WorkerStatus>> started;
  private final Set<String> awaited = new HashSet<>();
  private final List<WorkerStatus> answered = new ArrayList<>();

  private NodeGuardian(
      ActorContext<Command> ctx,
      NodeSettings settings,
      EngineProvider engines,
      CompletableFuture<List<WorkerStatus>> started) {
    super(ctx);
    this.started = started;
    initSharding(ctx.getSystem(), settings, engines);
    Set<String> roles = Cluster.get(ctx.getSystem()).selfMember().getRoles();
    boolean worker = roles.contains(ModelWorkerProtocol.ROLE);
    ctx.getLog().info("node roles {}: ModelWorker {}", roles, worker ? "host" : "proxy");
    if (worker && settings.startReplicas()) {
      ActorRef<WorkerStatus> up = ctx.messageAdapter(WorkerStatus.class, ReplicaUp::new);
      ClusterSharding sharding = ClusterSharding.get(ctx.getSystem());
      // The node's startup check waits for every answer (WorkerHealth.started).
      WorkerHealth.get(ctx.getSystem())
          .wakingUp(
              settings.models().models().stream()
                  .flatMap(m -> m.entityIds().stream())
                  .collect(java.util.stream.Collectors.toSet()));
      for (ServedModel model : settings.models().models())
        for (String id : model.entityIds()) {
          awaited.add(id);
          sharding
              .entityRefFor(ModelWorkerProtocol.TYPE_KEY, id)
              .tell(new ModelWorkerProtocol.GetStatus(up));
        }
    }
    if (awaited.isEmpty()) started.complete(List.of());
  }

  @Override
  public Receive<Command> createReceive() {
    return newReceiveBuilder().onMessage(ReplicaUp.class, this::onReplicaUp).build();
  }

  private Behavior<Command> onReplicaUp(ReplicaUp up) {
    WorkerStatus s = up.status();
    WorkerHealth health = WorkerHealth.get(getContext().getSystem());
    health.wokeUp(s.entityId());
    // Every worker node wakes every replica, wherever sharding put it: each node speaks only of
    // the replicas it hosts (the others' nodes say it themselves).
    if (!health.hosted().containsKey(s.entityId()))
      getContext().getLog().debug("replica {} answered from another node", s.entityId());
    else if (s.maxModelLen() > 0)
      getContext()
          .getLog()
          .info(
              "replica {} is up on this node (context {}, {} KV blocks)",
              s.entityId(),
              s.maxModelLen(),
              s.kvBlocksTotal());
    else getContext().getLog().warn("replica {} cannot serve: {}", s.entityId(), s.unavailable());
    if (awaited.remove(s.entityId())) {
      answered.add(s);
      if (awaited.isEmpty()) started.complete(List.copyOf(answered));
    }
    return this;
  }
}
