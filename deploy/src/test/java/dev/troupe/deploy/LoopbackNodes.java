package dev.troupe.deploy;

import com.typesafe.config.Config;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Nodes of the real distribution ({@link TroupeNode}) on loopback for one test: ephemeral HTTP and
 * cluster ports, no management port, one API key, each node's data under its own directory, the
 * test's config over the defaults. {@link #close} stops them last started first (the gateway, the
 * seed, last).
 */
final class LoopbackNodes implements AutoCloseable {
  private final Config config;
  private final String apiKey;
  private final List<TroupeNode> nodes = new ArrayList<>();

  LoopbackNodes(Config config, String apiKey) {
    this.config = config;
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
