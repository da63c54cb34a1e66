package dev.troupe.e2e;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.troupe.gateway.http.ApiRoutes;
import dev.troupe.gateway.http.GatewayServer;
import dev.troupe.gateway.http.GatewaySettings;
import dev.troupe.gateway.routes.StandardRoutes;
import dev.troupe.gateway.workers.ModelDirectory;
import dev.troupe.node.NodeGuardian;
import dev.troupe.node.NodeSettings;
import dev.troupe.worker.EngineProvider;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Join;
import org.apache.pekko.http.javadsl.ServerBinding;

/**
 * A one-node Troupe (roles gateway and worker) serving the built-in demo model over real HTTP on a
 * free port, assembled from the same parts as the distribution: the worker side's node guardian and
 * the gateway's standard routes.
 */
final class ChatServer implements AutoCloseable {
  static final String KEY = "sk-e2e-test";
  static final String MODEL = "demo";
  static final String PRIORITY_MODEL = "demo-priority";

  final ActorSystem<NodeGuardian.Command> system;
  final ServerBinding binding;

  private ChatServer(ActorSystem<NodeGuardian.Command> system, ServerBinding binding) {
    this.system = system;
    this.binding = binding;
  }

  static ChatServer start() throws Exception {
    Config config = ConfigFactory.parseString(
            """
            pekko.actor.provider = cluster
            pekko.remote.artery.canonical.hostname = 127.0.0.1
            pekko.remote.artery.canonical.port = 0
            pekko.cluster.roles = [gateway, worker]
            pekko.cluster.jmx.multi-mbeans-in-same-jvm = on
            pekko.coordinated-shutdown.exit-jvm = off
            pekko.coordinated-shutdown.run-by-jvm-shutdown-hook = off
            pekko.loglevel = WARNING
            pekko.cluster.log-info = off
            troupe.models = [
              { name = "%s", path = "demo" },
              { name = "%s", path = "demo", scheduling-policy = "priority" }
            ]
            troupe.worker.engine { num-blocks = 64, block-size = 16, max-num-seqs = 8 }
            troupe.worker.metrics-log-interval = 0s
            """.formatted(MODEL, PRIORITY_MODEL))
        .withFallback(ConfigFactory.load());
    NodeSettings node = NodeSettings.fromConfig(config);
    ActorSystem<NodeGuardian.Command> system = ActorSystem.create(
        NodeGuardian.create(node, EngineProvider.loading(node.engine())), "troupe-e2e", config);
    try {
      Cluster cluster = Cluster.get(system);
      cluster.manager().tell(Join.create(cluster.selfMember().address()));
      GatewaySettings gateway = GatewaySettings.of(0, List.of(KEY));
      ModelDirectory models = ModelDirectory.sharded(system, node.models(), Duration.ofSeconds(60));
      var route = ApiRoutes.builder(gateway).addAll(StandardRoutes.of(models)).build();
      ServerBinding binding = GatewayServer.bind(system, gateway, route).toCompletableFuture().get(30, TimeUnit.SECONDS);
      ChatServer server = new ChatServer(system, binding);
      server.awaitHealthy(Duration.ofMinutes(3));
      return server;
    } catch (Exception e) {
      system.terminate();
      throw e;
    }
  }

  /** Polls {@code /health} until every model's worker answers (the models are loaded). */
  private void awaitHealthy(Duration limit) throws Exception {
    HttpClient http = HttpClient.newHttpClient();
    HttpRequest health = HttpRequest.newBuilder(URI.create(baseUrl() + "/health")).build();
    long deadline = System.nanoTime() + limit.toNanos();
    while (System.nanoTime() < deadline) {
      if (http.send(health, HttpResponse.BodyHandlers.discarding()).statusCode() == 200) return;
      Thread.sleep(200);
    }
    throw new IllegalStateException("the server did not become healthy within " + limit);
  }

  String baseUrl() {
    return "http://127.0.0.1:" + binding.localAddress().getPort();
  }

  @Override
  public void close() throws Exception {
    binding.unbind().toCompletableFuture().get(10, TimeUnit.SECONDS);
    system.terminate();
    system.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
  }
}
