package dev.troupe.deploy;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Nodes of the real distribution ({@link TroupeNode}) on loopback for one test: ephemeral HTTP and
 * cluster ports, no management port, one API key, each node's data under its own directory, the
 * test's config over {@link #IN_ONE_JVM} and the defaults. {@link #close} stops them last started
 * first (the gateway, the seed, last).
 */
final class LoopbackNodes implements AutoCloseable {
  /**
   * What several nodes in a test's JVM need under any test's config: a node's shutdown must not
   * exit the JVM or wait for its shutdown hook, each node its own JMX beans; quiet logs.
   */
  static final Config IN_ONE_JVM =
      ConfigFactory.parseString(
          """
          pekko.coordinated-shutdown.exit-jvm = off
          pekko.coordinated-shutdown.run-by-jvm-shutdown-hook = off
          pekko.cluster.jmx.multi-mbeans-in-same-jvm = on
          pekko.loglevel = WARNING
          pekko.cluster.log-info = off
          troupe.worker.metrics-log-interval = 0s
          """);

  private final Config config;
  private final String apiKey;
  private final List<TroupeNode> nodes = new ArrayList<>();

  LoopbackNodes(Config config, String apiKey) {
    this.config = config.withFallback(IN_ONE_JVM);
    this.apiKey = apiKey;
  }

  /**
   * A node of {@code roles} with data under {@code dir}, joining {@code seed} (null: the first),
   * with the launcher's {@code extra} arguments after these.
   */
  TroupeNode start(Path dir, String roles, String seed, String... extra) throws Exception {
    List<String> args =
        new ArrayList<>(
            List.of(
                "--roles",
                roles,
                "--port",
                "0",
                "--cluster-port",
                "0",
                "--management-port",
                "-1",
                "--api-key",
                apiKey,
                "--data-dir",
                dir.toString()));
    if (seed != null) args.addAll(List.of("--seed-nodes", seed));
    args.addAll(List.of(extra));
    TroupeNode node = TroupeNode.start(LaunchOptions.parse(args, null), config, key -> {});
    nodes.add(node);
    return node;
  }

  /** Stops {@code node} now (a node leaving the cluster mid-test); {@link #close} skips it. */
  void stop(TroupeNode node) {
    nodes.remove(node);
    node.close();
  }

  @Override
  public void close() {
    for (int i = nodes.size() - 1; i >= 0; i--) nodes.get(i).close();
    nodes.clear();
  }
}
