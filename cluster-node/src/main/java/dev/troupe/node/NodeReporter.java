package dev.troupe.node;

import dev.troupe.protocol.cluster.ClusterViewProtocol;
import dev.troupe.protocol.cluster.ClusterViewProtocol.Command;
import dev.troupe.protocol.cluster.ClusterViewProtocol.DescribeNode;
import dev.troupe.protocol.cluster.ClusterViewProtocol.Jvm;
import dev.troupe.protocol.cluster.ClusterViewProtocol.NodeReport;
import dev.troupe.protocol.cluster.ClusterViewProtocol.ReplicaReport;
import dev.troupe.protocol.cluster.ClusterViewProtocol.ReplicaState;
import dev.troupe.protocol.cluster.ModelWorkerProtocol;
import dev.troupe.protocol.cluster.WorkerStatus;
import dev.troupe.worker.WorkerHealth;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.function.BooleanSupplier;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;
import org.apache.pekko.actor.typed.receptionist.Receptionist;
import org.apache.pekko.cluster.typed.Cluster;

/**
 * Describes this node for the gateways' cluster view ({@link ClusterViewProtocol}): its roles,
 * start time, JVM and the model replicas it hosts. One per node, whatever its roles, registered
 * with the receptionist under {@link ClusterViewProtocol#NODE_REPORTERS}.
 *
 * <p>A replica's state comes from the node's {@link WorkerHealth} (a loading replica's actor is
 * busy reading its weights and cannot answer); a serving one is asked for its status and details,
 * and one that does not answer within {@code askTimeout} is reported unresponsive. Nothing survives
 * a restart: it holds no state of its own.
 */
public final class NodeReporter extends AbstractBehavior<Command> {
  private final Duration askTimeout;
  private final BooleanSupplier draining;

  /**
   * @param askTimeout how long a serving replica may take to describe itself
   * @param draining whether the node is shutting down (its readiness is off)
   */
  public static Behavior<Command> create(Duration askTimeout, BooleanSupplier draining) {
    return Behaviors.setup(ctx -> new NodeReporter(ctx, askTimeout, draining));
  }

  private NodeReporter(ActorContext<Command> ctx, Duration askTimeout, BooleanSupplier draining) {
    super(ctx);
    this.askTimeout = askTimeout;
    this.draining = draining;
    ctx.getSystem()
        .receptionist()
        .tell(Receptionist.register(ClusterViewProtocol.NODE_REPORTERS, ctx.getSelf()));
  }

  @Override
  public Receive<Command> createReceive() {
    return newReceiveBuilder().onMessage(DescribeNode.class, this::onDescribeNode).build();
  }

  private Behavior<Command> onDescribeNode(DescribeNode d) {
    var system = getContext().getSystem();
    boolean nodeDraining = draining.getAsBoolean();
    List<CompletableFuture<ReplicaReport>> replicas = new ArrayList<>();
    Map<String, WorkerHealth.Replica> hosted = new TreeMap<>(WorkerHealth.get(system).hosted());
    hosted.forEach((id, r) -> replicas.add(describe(id, r, nodeDraining)));
    Runtime rt = Runtime.getRuntime();
    Jvm jvm =
        new Jvm(
            rt.availableProcessors(),
            rt.totalMemory() - rt.freeMemory(),
            rt.maxMemory(),
            ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage());
    String node = ClusterViewProtocol.nodeName(system.address());
    List<String> roles = new ArrayList<>(Cluster.get(system).selfMember().getRoles());
    roles.sort(null);
    CompletableFuture.allOf(replicas.toArray(CompletableFuture[]::new))
        .thenRun(
            () ->
                d.replyTo()
                    .tell(
                        new NodeReport(
                            node,
                            roles,
                            system.startTime(),
                            nodeDraining,
                            jvm,
                            replicas.stream().map(CompletableFuture::join).toList())));
    return this;
  }

  /** One hosted replica: from the node's health, and from the replica itself when it serves. */
  private CompletableFuture<ReplicaReport> describe(
      String id, WorkerHealth.Replica r, boolean nodeDraining) {
    return switch (r.state()) {
      case LOADING -> done(new ReplicaReport(id, ReplicaState.LOADING, null, r.restarts(), null));
      case RESTARTING ->
          done(new ReplicaReport(id, ReplicaState.RESTARTING, r.reason(), r.restarts(), null));
      case FAILED ->
          done(new ReplicaReport(id, ReplicaState.FAILED, r.reason(), r.restarts(), null));
      case SERVING ->
          AskPattern.<ModelWorkerProtocol.Command, WorkerStatus>ask(
                  r.worker(),
                  ModelWorkerProtocol.Describe::new,
                  askTimeout,
                  getContext().getSystem().scheduler())
              // on the dispatcher: the ask's stage runs its non-async methods on the common pool,
              // which starts a thread per task on 1-2 cores (a replica asked per /v1/cluster call)
              .handleAsync(
                  (status, error) -> {
                    if (error != null)
                      return new ReplicaReport(
                          id,
                          ReplicaState.UNRESPONSIVE,
                          "did not describe itself within " + askTimeout.toMillis() + " ms",
                          r.restarts(),
                          null);
                    boolean drains =
                        nodeDraining || (status.details() != null && status.details().draining());
                    return new ReplicaReport(
                        id,
                        drains ? ReplicaState.DRAINING : ReplicaState.READY,
                        null,
                        r.restarts(),
                        status);
                  },
                  getContext().getSystem().executionContext())
              .toCompletableFuture();
    };
  }

  private static CompletableFuture<ReplicaReport> done(ReplicaReport report) {
    return CompletableFuture.completedFuture(report);
  }
}
