package dev.troupe.preview;

import com.typesafe.config.Config;
import dev.troupe.gateway.http.ApiRoutes;
import dev.troupe.gateway.http.GatewayServer;
import dev.troupe.gateway.http.GatewaySettings;
import dev.troupe.gateway.preview.PreviewContext;
import dev.troupe.gateway.preview.PreviewRoutes;
import dev.troupe.node.DataEntities;
import dev.troupe.persistence.PersistenceInit;
import dev.troupe.persistence.PersistenceSettings;
import dev.troupe.testing.TestNodeConfig;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Join;
import org.apache.pekko.http.javadsl.ServerBinding;

/**
 * A node as the tests need it: a Pekko cluster member with the preview data entities (role trainer)
 * and the preview HTTP routes behind Bearer auth, on any free ports. What deploy's Main does for
 * these parts, in a few lines.
 */
final class PreviewNode implements AutoCloseable {
  static final String KEY = "sk-preview-test";
  static final String BASE_MODEL = "Qwen/Qwen3-0.6B";

  final ActorSystem<Void> system;
  final ServerBinding binding;

  private PreviewNode(ActorSystem<Void> system, ServerBinding binding) {
    this.system = system;
    this.binding = binding;
  }

  /** A one-node cluster (or a member joining {@code seed}) on {@code settings}. */
  static PreviewNode start(PersistenceSettings settings, Address seed) {
    return start(settings, seed, GatewaySettings.DEFAULT_MAX_BODY_BYTES);
  }

  /** As above, with a request body limit. */
  static PreviewNode start(PersistenceSettings settings, Address seed, long maxBodyBytes) {
    PersistenceInit.ensureSchema(settings);
    Config config = TestNodeConfig.gatewayTrainer(settings, BASE_MODEL);
    ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), "troupe", config);
    try {
      Cluster cluster = Cluster.get(system);
      cluster.manager().tell(Join.create(seed != null ? seed : cluster.selfMember().address()));
      DataEntities.init(system, settings);
      GatewaySettings gs = GatewaySettings.of(0, List.of(KEY)).withMaxBodyBytes(maxBodyBytes);
      var route =
          ApiRoutes.builder(gs)
              .addAll(PreviewRoutes.all(PreviewContext.sharded(system, Duration.ofSeconds(20))))
              .build();
      ServerBinding binding =
          GatewayServer.bind(system, gs, route).toCompletableFuture().get(30, TimeUnit.SECONDS);
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while (cluster.selfMember().status() != MemberStatus.up()) {
        if (System.nanoTime() > deadline) throw new IllegalStateException("node did not come up");
        Thread.sleep(50);
      }
      return new PreviewNode(system, binding);
    } catch (Exception e) {
      system.terminate();
      throw new IllegalStateException(e);
    }
  }

  static PreviewNode start(PersistenceSettings settings) {
    return start(settings, null);
  }

  String baseUrl() {
    return "http://127.0.0.1:" + binding.localAddress().getPort();
  }

  Address address() {
    return Cluster.get(system).selfMember().address();
  }

  @Override
  public void close() {
    system.terminate();
    try {
      system.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }
}
