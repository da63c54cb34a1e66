package dev.troupe.node;

import dev.troupe.protocol.cluster.ModelWorkerProtocol;
import dev.troupe.protocol.cluster.ServedModels.ServedModel;
import dev.troupe.protocol.cluster.WorkerStatus;
import dev.troupe.worker.EngineProvider;
import dev.troupe.worker.ModelWorker;
import dev.troupe.worker.WorkerHealth;
import java.util.Set;
import java.util.stream.Collectors;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.typed.Cluster;

/**
 * The node's guardian for the inference side: starts {@code ModelWorker} sharding ({@link
 * ModelWorker#init}: hosts on role {@code worker}, a proxy elsewhere), and on worker nodes wakes
 * every configured replica so models are loaded before the first request, logging each as it
 * answers. The answers go to the node's {@link WorkerHealth}, which the startup check and the
 * launcher ({@link WorkerHealth#replicasStarted()}) read. With remember-entities the replicas of a
 * node that leaves are restarted on the others.
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
    return Behaviors.setup(ctx -> new NodeGuardian(ctx, settings, engines));
  }

  private final WorkerHealth health;

  private NodeGuardian(ActorContext<Command> ctx, NodeSettings settings, EngineProvider engines) {
    super(ctx);
    this.health = WorkerHealth.get(ctx.getSystem());
    ModelWorker.init(ctx.getSystem(), settings.models(), engines, settings.metricsLogInterval());
    Set<String> roles = Cluster.get(ctx.getSystem()).selfMember().getRoles();
    boolean worker = roles.contains(ModelWorkerProtocol.ROLE);
    ctx.getLog().info("node roles {}: ModelWorker {}", roles, worker ? "host" : "proxy");
    if (!worker || !settings.startReplicas()) {
      health.wakingUp(Set.of());
      return;
    }
    Set<String> ids =
        settings.models().models().stream()
            .flatMap(m -> m.entityIds().stream())
            .collect(Collectors.toSet());
    health.wakingUp(ids);
    ActorRef<WorkerStatus> up = ctx.messageAdapter(WorkerStatus.class, ReplicaUp::new);
    ClusterSharding sharding = ClusterSharding.get(ctx.getSystem());
    for (ServedModel model : settings.models().models())
      for (String id : model.entityIds())
        sharding
            .entityRefFor(ModelWorkerProtocol.TYPE_KEY, id)
            .tell(new ModelWorkerProtocol.GetStatus(up));
  }

  @Override
  public Receive<Command> createReceive() {
    return newReceiveBuilder().onMessage(ReplicaUp.class, this::onReplicaUp).build();
  }

  private Behavior<Command> onReplicaUp(ReplicaUp up) {
    WorkerStatus s = up.status();
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
    health.wokeUp(s);
    return this;
  }
}
