package dev.troupe.e2e;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.troupe.deploy.LaunchOptions;
import dev.troupe.deploy.TroupeNode;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/**
 * The real server as {@code ./troupe serve} starts it ({@link TroupeNode}, the node {@code Main}
 * runs, with the same flags), on free ports with a temporary data directory: a one-node cluster
 * with every role serving the built-in demo model, plus a second demo model under the priority
 * scheduling policy.
 */
final class ChatServer implements AutoCloseable {
  static final String KEY = "sk-e2e-test";
  static final String MODEL = "demo";
  static final String PRIORITY_MODEL = "demo-priority";

  /** The two models of the default server. */
  static final String MODELS =
      """
      [
        { name = "%s", path = "demo" },
        { name = "%s", path = "demo", scheduling-policy = "priority" }
      ]
      """
          .formatted(MODEL, PRIORITY_MODEL);

  /** Test-only settings on top of the flags: no JVM exit, a small KV cache, the models. */
  private static Config overrides(String models) {
    return ConfigFactory.parseString(
        """
        pekko.coordinated-shutdown.exit-jvm = off
        pekko.coordinated-shutdown.run-by-jvm-shutdown-hook = off
        pekko.cluster.jmx.multi-mbeans-in-same-jvm = on
        pekko.loglevel = WARNING
        pekko.cluster.log-info = off
        troupe.models = %s
        troupe.worker.engine { num-blocks = 64, block-size = 16, max-num-seqs = 8 }
        troupe.worker.metrics-log-interval = 0s
        """
            .formatted(models));
  }

  private final TroupeNode node;
  private final Path dataDir;

  private ChatServer(TroupeNode node, Path dataDir) {
    this.node = node;
    this.dataDir = dataDir;
  }

  static ChatServer start() throws Exception {
    return start(MODELS);
  }

  /** A server with these {@code troupe.models} (HOCON list). */
  static ChatServer start(String models) throws Exception {
    return start(models, -1);
  }

  /**
   * A server with these {@code troupe.models} and Pekko Management on {@code managementPort} (0: a
   * free port, -1: off).
   */
  static ChatServer start(String models, int managementPort) throws Exception {
    return start(models, managementPort, ConfigFactory.empty());
  }

  /** As {@link #start(String, int)}, with {@code extra} config over the test settings. */
  static ChatServer start(String models, int managementPort, Config extra) throws Exception {
    Path dir = Files.createTempDirectory("troupe-e2e");
    List<String> flags =
        List.of(
            "--port",
            "0",
            "--cluster-port",
            "0",
            "--management-port",
            String.valueOf(managementPort),
            "--api-key",
            KEY,
            "--data-dir",
            dir.toString());
    TroupeNode node =
        TroupeNode.start(
            LaunchOptions.parse(flags, null), extra.withFallback(overrides(models)), key -> {});
    ChatServer server = new ChatServer(node, dir);
    try {
      server.awaitHealthy(Duration.ofMinutes(3));
    } catch (Exception | Error e) {
      server.close();
      throw e;
    }
    return server;
  }

  /** Polls {@code /health} until a worker of every model answers (the models are loaded). */
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

  /** Where the HTTP API listens. */
  java.net.InetSocketAddress httpAddress() {
    return node.httpAddress();
  }

  /** The cluster (Artery) port. */
  int clusterPort() {
    return node.address().getPort().orElseThrow();
  }

  /** Pekko Management's base address (when started with a management port). */
  String managementUrl() throws Exception {
    return org.apache.pekko.management.javadsl.PekkoManagement.get(node.system())
        .start()
        .toCompletableFuture()
        .get(10, java.util.concurrent.TimeUnit.SECONDS)
        .toString();
  }

  String baseUrl() {
    return "http://127.0.0.1:" + node.httpPort();
  }

  @Override
  public void close() throws Exception {
    node.close();
    try (var files = Files.walk(dataDir)) {
      files.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    }
  }
}
