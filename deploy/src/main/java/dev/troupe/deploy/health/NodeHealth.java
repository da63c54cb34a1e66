package dev.troupe.deploy.health;

import dev.troupe.protocol.cluster.Roles;
import dev.troupe.worker.WorkerHealth;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Extension;
import org.apache.pekko.actor.typed.ExtensionId;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;

/**
 * What the node's three health checks answer, by its roles (Pekko Management's {@code /startup},
 * {@code /ready}, {@code /alive} on the management port; the gateway's {@code GET /health} answers
 * {@link #ready()} too):
 *
 * <ul>
 *   <li><b>startup</b>: a worker's replicas have loaded ({@link WorkerHealth#started()}); a
 *       gateway's HTTP API is bound.
 *   <li><b>readiness</b>: not draining, this member is Up, a worker's replicas all accept requests
 *       ({@link WorkerHealth#accepting()}), and a gateway reaches at least one loaded replica of
 *       every served model (registered with {@link #gatewayBound}).
 *   <li><b>liveness</b>: the actor system answers a message within the check's timeout.
 * </ul>
 *
 * <p>On shutdown (SIGTERM) readiness fails first ({@link #drain()}), before anything stops.
 *
 * <p>One per actor system (an {@link Extension}); thread-safe.
 */
public final class NodeHealth implements Extension {

  private static final ExtensionId<NodeHealth> ID =
      new ExtensionId<>() {
        @Override
        public NodeHealth createExtension(ActorSystem<?> system) {
          return new NodeHealth(system);
        }
      };

  /** Answers pings: the liveness check's round trip through a dispatcher. */
  private record Ping(ActorRef<Boolean> replyTo) {}

  private final ActorSystem<?> system;
  private final Set<String> roles;
  private final ActorRef<Ping> pong;
  private volatile Supplier<CompletionStage<Boolean>> gateway;
  private volatile boolean draining;

  private NodeHealth(ActorSystem<?> system) {
    this.system = system;
    this.roles = Cluster.get(system).selfMember().getRoles();
    this.pong =
        system.systemActorOf(
            Behaviors.receive(Ping.class)
                .onMessage(
                    Ping.class,
                    p -> {
                      p.replyTo().tell(true);
                      return Behaviors.same();
                    })
                .build(),
            "troupe-liveness",
            Props.empty());
  }

  public static NodeHealth get(ActorSystem<?> system) {
    return system.registerExtension(ID);
  }

  /** For the classic actor system Pekko Management gives its health checks. */
  public static NodeHealth get(org.apache.pekko.actor.ActorSystem system) {
    return Adapter.toTyped(system).registerExtension(ID);
  }

  /** The gateway's HTTP API is bound; {@code modelsReady} says whether every model can serve. */
  public void gatewayBound(Supplier<CompletionStage<Boolean>> modelsReady) {
    this.gateway = modelsReady;
  }

  /** The node is shutting down: readiness fails from now on. */
  public void drain() {
    draining = true;
    if (worker()) WorkerHealth.get(system).drain();
  }

  public boolean draining() {
    return draining;
  }

  public CompletionStage<Boolean> startup() {
    boolean ok =
        (!worker() || WorkerHealth.get(system).started()) && (!gatewayRole() || gateway != null);
    return CompletableFuture.completedFuture(ok);
  }

  public CompletionStage<Boolean> ready() {
    if (draining || !up()) return CompletableFuture.completedFuture(false);
    if (worker() && !WorkerHealth.get(system).accepting())
      return CompletableFuture.completedFuture(false);
    if (!gatewayRole()) return CompletableFuture.completedFuture(true);
    Supplier<CompletionStage<Boolean>> models = gateway;
    return models == null ? CompletableFuture.completedFuture(false) : models.get();
  }

  /** True when a message to an actor of this system comes back within {@code timeout}. */
  public CompletionStage<Boolean> alive(Duration timeout) {
    return AskPattern.<Ping, Boolean>ask(pong, Ping::new, timeout, system.scheduler());
  }

  private boolean up() {
    MemberStatus s = Cluster.get(system).selfMember().status();
    return s == MemberStatus.up() || s == MemberStatus.weaklyUp();
  }

  private boolean worker() {
    return roles.contains(Roles.WORKER);
  }

  private boolean gatewayRole() {
    return roles.contains(Roles.GATEWAY);
  }
}
