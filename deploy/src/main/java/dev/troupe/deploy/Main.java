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
import org.apache.pekko.actor.CoordinatedShutdown;

/**
 * Entry point of the distribution ({@code ./troupe serve [flags]}, or {@code java -jar troupe.jar
 * serve [flags]}): parses the flags (see {@link LaunchOptions#USAGE}), starts one node, waits for
 * its models to load (on a gateway: for every served model to be ready somewhere in the cluster),
 * says it is serving, and runs until the JVM is stopped. {@code troupe status} prints the cluster
 * instead ({@link StatusCommand}). SIGTERM drains the node ({@link GracefulShutdown}: readiness
 * fails, generations in flight finish or migrate, shards hand off, the node leaves) and exits with
 * status 0; Ctrl-C leaves the cluster without the drain's waits. {@code --help} and {@code
 * --version} print to standard output and exit with status 0; bad flags exit with status 2. A node
 * that cannot start (a port in use, a model that is not a model directory or fails to load) prints
 * one line saying why and exits with status 1.
 */
public final class Main {
  private Main() {}

  public static void main(String[] args) throws Exception {
    if (args.length > 0 && args[0].equals("status")) {
      System.exit(
          StatusCommand.run(
              Arrays.asList(args).subList(1, args.length),
              System.getenv("TROUPE_API_KEYS"),
              System.out,
              System.err));
      return;
    }
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
    onSigterm(node);
    // "Serving" only once this node's replicas have loaded (one that failed stops the node) and,
    // on a gateway, once every served model has a loaded replica somewhere in the cluster.
    CompletableFuture<List<WorkerStatus>> started = node.serving().toCompletableFuture();
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

  /** Why the node shuts down after a SIGTERM (its Coordinated Shutdown's reason). */
  enum Sigterm implements CoordinatedShutdown.Reason {
    INSTANCE
  }

  /**
   * SIGTERM (Kubernetes, Slurm, systemd stopping the node) runs the graceful shutdown instead of
   * the JVM's shutdown: the JVM would exit with 143 after its hooks, and the drain would race the
   * JVM's exit. Coordinated Shutdown then exits the JVM with status 0 (exit-jvm).
   */
  private static void onSigterm(TroupeNode node) {
    // sun.misc.Signal (module jdk.unsupported) is the JVM's way to handle a signal; it is called
    // reflectively because javac warns on every direct use and that warning cannot be suppressed.
    try {
      Class<?> signal = Class.forName("sun.misc.Signal");
      Class<?> handlerType = Class.forName("sun.misc.SignalHandler");
      Object handler =
          java.lang.reflect.Proxy.newProxyInstance(
              handlerType.getClassLoader(),
              new Class<?>[] {handlerType},
              (proxy, method, args) ->
                  switch (method.getName()) {
                    case "handle" -> {
                      CoordinatedShutdown.get(node.system()).run(Sigterm.INSTANCE);
                      yield null;
                    }
                    case "hashCode" -> System.identityHashCode(proxy);
                    case "equals" -> proxy == args[0];
                    default -> "SIGTERM: drain and exit";
                  });
      signal
          .getMethod("handle", signal, handlerType)
          .invoke(null, signal.getConstructor(String.class).newInstance("TERM"), handler);
    } catch (ReflectiveOperationException | RuntimeException e) {
      // No SIGTERM to handle here: the JVM's shutdown hook still leaves the cluster (exit 143).
      org.slf4j.LoggerFactory.getLogger(Main.class)
          .warn("SIGTERM will not drain the node: {}", e.toString());
    }
  }
}
