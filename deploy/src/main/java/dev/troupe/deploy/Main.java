package dev.troupe.deploy;

import com.typesafe.config.ConfigFactory;
import dev.troupe.engine.model.ModelFiles;
import dev.troupe.engine.model.ModelLoadException;
import dev.troupe.engine.runner.Devices;
import dev.troupe.protocol.cluster.Roles;
import dev.troupe.protocol.cluster.ServedModels.ServedModel;
import dev.troupe.protocol.cluster.WorkerStatus;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * Entry point of the distribution ({@code ./troupe serve [flags]}, or {@code java -jar troupe.jar
 * serve [flags]}): parses the flags (see {@link LaunchOptions#USAGE}), starts one node, waits for
 * its models to load, says it is serving, and runs until the JVM is stopped (SIGTERM/Ctrl-C leave
 * the cluster gracefully). {@code --help} and {@code --version} print to standard output and exit
 * with status 0; bad flags exit with status 2. A node that cannot start (a port in use, a model
 * that is not a model directory or fails to load) prints one line saying why and exits with status
 * 1.
 */
public final class Main {
  private Main() {}

  public static void main(String[] args) throws Exception {
    LaunchOptions options;
    try {
      options = LaunchOptions.parse(Arrays.asList(args), System.getenv("TROUPE_API_KEYS"));
    } catch (LaunchOptions.InfoRequested info) {
      System.out.println(info.getMessage().stripTrailing());
      System.exit(0);
      return;
    } catch (IllegalArgumentException e) {
      System.err.println("troupe: " + e.getMessage() + " (see --help)");
      System.exit(2);
      return;
    }
    if (options.roles().contains(Roles.WORKER)) {
      try {
        // --device cuda on a machine that cannot serve it: one line naming what is missing, exit 2
        Devices.checkAvailable(options.device());
      } catch (Devices.NoDeviceException e) {
        System.err.println(e.getMessage());
        System.exit(2);
        return;
      }
      // A model directory that cannot be served stops the node before anything starts (vLLM).
      for (var model : options.models().entrySet()) {
        if (model.getValue().equals(ServedModel.DEMO_PATH)) continue;
        try {
          ModelFiles.check(model.getValue());
        } catch (ModelLoadException e) {
          System.err.println("troupe: model " + model.getKey() + ": " + e.getMessage());
          System.exit(1);
          return;
        }
      }
    }
    TroupeNode node;
    try {
      node =
          TroupeNode.start(
              options,
              ConfigFactory.empty(),
              key ->
                  System.out.println(
                      "\nGenerated API key (shown once, kept in "
                          + options.dataDir().resolve(ApiKeys.FILE)
                          + "):\n\n    "
                          + key
                          + "\n"));
    } catch (StartupException e) {
      System.err.println("troupe: " + e.getMessage());
      System.exit(1);
      return;
    } catch (Exception e) {
      // Anything else is unexpected: one line here, the stack trace in the log at DEBUG.
      org.slf4j.LoggerFactory.getLogger(Main.class).debug("start failed", e);
      System.err.println("troupe: failed to start: " + e);
      System.exit(1);
      return;
    }
    // "Serving" only once this node's replicas have loaded; one that failed stops the node.
    CompletableFuture<List<WorkerStatus>> started = node.replicasStarted().toCompletableFuture();
    CompletableFuture.anyOf(started, node.system().getWhenTerminated().toCompletableFuture())
        .join();
    if (started.isDone()) {
      for (WorkerStatus replica : started.join()) {
        if (replica.unavailable() != null) {
          System.err.println("troupe: " + replica.unavailable());
          node.close();
          System.exit(1);
          return;
        }
      }
      if (node.httpPort() > 0)
        System.out.println(
            "Troupe is serving "
                + options.models().keySet()
                + " on http://localhost:"
                + node.httpPort()
                + "/v1");
    }
    node.system().getWhenTerminated().toCompletableFuture().get();
    // A terminated system no longer exits the JVM itself (troupe-node.conf): leave with success.
    System.exit(0);
  }
}
