package dev.troupe.deploy;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigValueFactory;
import dev.troupe.deploy.health.NodeHealth;
import dev.troupe.gateway.http.GatewayServer;
import dev.troupe.node.WorkerDrain;
import dev.troupe.protocol.cluster.Roles;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;
import org.apache.pekko.Done;
import org.apache.pekko.actor.CoordinatedShutdown;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.apache.pekko.pattern.Patterns;

/**
 * The node's graceful shutdown, as tasks of its Coordinated Shutdown (run on SIGTERM by {@link
 * Main}, or when the node is told to leave), in phase order:
 *
 * <ol>
 *   <li>{@code before-service-unbind}: readiness fails ({@link NodeHealth#drain()}); the node keeps
 *       serving for {@code unready-delay} so load balancers stop sending it requests.
 *   <li>{@code service-unbind}: the HTTP API stops accepting connections (a gateway).
 *   <li>{@code service-requests-done}: HTTP responses in flight (a gateway: streamed ones to their
 *       last chunk) and generations in flight (a worker, {@link WorkerDrain}) get up to {@code
 *       timeout} to finish.
 *   <li>Pekko's own phases: sharding hands the replicas off (what still runs migrates to other
 *       replicas, token-exactly), the node leaves the cluster, the actor system stops.
 * </ol>
 *
 * <p>A shutdown the node asks for itself ({@code ActorSystem.terminate()}: a failed start, {@link
 * TroupeNode#close()}) skips the waits.
 */
final class GracefulShutdown {
  private GracefulShutdown() {}

  /**
   * {@code troupe.node.drain}: in-flight work's bound and the delay between failing readiness and
   * closing the HTTP port.
   */
  record Settings(Duration timeout, Duration unreadyDelay) {
    static Settings fromConfig(Config config) {
      return new Settings(
          config.getDuration("troupe.node.drain.timeout"),
          config.getDuration("troupe.node.drain.unready-delay"));
    }
  }

  /** Slack each phase gets beyond what its task waits for. */
  private static final Duration SLACK = Duration.ofSeconds(5);

  /**
   * {@code config} with the drain timeout {@code --shutdown-timeout} gives (seconds; -1 = keep the
   * config's), and phase timeouts that let the tasks run to their bounds.
   */
  static Config phaseTimeouts(Config config, int shutdownTimeoutSeconds) {
    Config c = config;
    if (shutdownTimeoutSeconds >= 0)
      c = set(c, "troupe.node.drain.timeout", shutdownTimeoutSeconds + "s");
    Settings s = Settings.fromConfig(c);
    String phases = "pekko.coordinated-shutdown.phases.";
    c = set(c, phases + "before-service-unbind.timeout", millis(s.unreadyDelay().plus(SLACK)));
    return set(c, phases + "service-requests-done.timeout", millis(s.timeout().plus(SLACK)));
  }

  private static Config set(Config c, String path, String value) {
    return c.withValue(path, ConfigValueFactory.fromAnyRef(value));
  }

  private static String millis(Duration d) {
    return d.toMillis() + "ms";
  }

  /** The tasks every node runs: readiness off, then (on a worker) the model replicas' drain. */
  static void register(ActorSystem<?> system, Settings settings) {
    CoordinatedShutdown cs = CoordinatedShutdown.get(system);
    cs.addTask(
        CoordinatedShutdown.PhaseBeforeServiceUnbind(),
        "troupe-unready",
        () -> {
          NodeHealth.get(system).drain();
          return unlessSelfInflicted(system, () -> after(system, settings.unreadyDelay()));
        });
    if (Cluster.get(system).selfMember().hasRole(Roles.WORKER))
      WorkerDrain.register(system, settings.timeout());
  }

  /** The gateway's tasks: no new connections, then its requests in flight finish (bounded). */
  static void registerGateway(ActorSystem<?> system, ServerBinding binding, Settings settings) {
    CoordinatedShutdown cs = CoordinatedShutdown.get(system);
    cs.addTask(
        CoordinatedShutdown.PhaseServiceUnbind(),
        "troupe-http-unbind",
        () ->
            unlessSelfInflicted(system, () -> binding.unbind().thenApply(u -> Done.getInstance())));
    // Pekko's binding.terminate alone would close at once a connection whose streamed response
    // has begun (a stream cut mid-answer); GatewayServer.terminate waits for it first.
    cs.addTask(
        CoordinatedShutdown.PhaseServiceRequestsDone(),
        "troupe-http-requests-done",
        () ->
            unlessSelfInflicted(
                system,
                () ->
                    GatewayServer.terminate(system, binding, settings.timeout())
                        .thenApply(t -> Done.getInstance())));
  }

  /** {@code task}, unless the node itself terminated its actor system (nothing to wait for). */
  private static CompletionStage<Done> unlessSelfInflicted(
      ActorSystem<?> system, Supplier<CompletionStage<Done>> task) {
    var reason = CoordinatedShutdown.get(system).getShutdownReason();
    if (reason.isPresent() && reason.get() == CoordinatedShutdown.actorSystemTerminateReason())
      return CompletableFuture.completedFuture(Done.getInstance());
    return task.get();
  }

  private static CompletionStage<Done> after(ActorSystem<?> system, Duration delay) {
    if (delay.isZero()) return CompletableFuture.completedFuture(Done.getInstance());
    return Patterns.after(
        delay,
        system.classicSystem().scheduler(),
        system.executionContext(),
        () -> CompletableFuture.completedFuture(Done.getInstance()));
  }
}
