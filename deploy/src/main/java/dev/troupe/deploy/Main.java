package dev.troupe.deploy;

import com.typesafe.config.ConfigFactory;
import dev.troupe.engine.runner.Devices;
import dev.troupe.protocol.cluster.Roles;
import java.util.Arrays;

/**
 * Entry point of the distribution ({@code ./troupe serve [flags]}, or {@code java -jar troupe.jar
 * serve [flags]}): parses the flags (see {@link LaunchOptions#USAGE}) and runs one node until the
 * JVM is stopped (SIGTERM/Ctrl-C leave the cluster gracefully). {@code --help} and {@code
 * --version} print to standard output and exit with status 0. A node that cannot start (a port in
 * use) prints one line saying why and exits with status 1; bad flags exit with status 2.
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
    if (node.httpPort() > 0)
      System.out.println(
          "Troupe is serving "
              + options.models().keySet()
              + " on http://localhost:"
              + node.httpPort()
              + "/v1");
    node.system().getWhenTerminated().toCompletableFuture().get();
    // A terminated system no longer exits the JVM itself (troupe-node.conf): leave with success.
    System.exit(0);
  }
}
