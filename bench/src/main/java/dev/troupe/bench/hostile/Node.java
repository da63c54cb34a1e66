package dev.troupe.bench.hostile;

import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * The node under attack, in its own JVM as {@code ./troupe serve} runs it ({@code
 * dev.troupe.deploy.Main} with the launcher's JVM options, the demo model, CPU), so that a crash is
 * a process that exits, not the suite's own death.
 */
final class Node implements AutoCloseable {
  static final String KEY = "sk-hostile";

  private final Path data;
  private final Path log;
  private final String heap;
  final Target target;
  private Process process;

  private Node(Path data, Path log, String heap, Target target) {
    this.data = data;
    this.log = log;
    this.heap = heap;
    this.target = target;
  }

  /** Starts a node on free ports with {@code data} as its data directory. */
  static Node start(Path data, Path log, String heap) throws Exception {
    Node n = new Node(data, log, heap, new Target(freePort(), freePort(), freePort(), KEY));
    n.launch();
    return n;
  }

  private static int freePort() throws Exception {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  private void launch() throws Exception {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.addAll(
        List.of(
            "-Xmx" + heap,
            "-XX:+UseG1GC",
            "-XX:PerMethodTrapLimit=1000", // as the ./troupe launcher
            "--add-modules",
            "jdk.incubator.vector",
            "--add-opens",
            "java.base/java.nio=ALL-UNNAMED",
            "--add-opens",
            "java.base/java.lang=ALL-UNNAMED",
            "--add-opens",
            "java.base/sun.nio.ch=ALL-UNNAMED",
            "-cp",
            System.getProperty("java.class.path"),
            "dev.troupe.deploy.Main",
            "serve",
            "--port",
            Integer.toString(target.port),
            "--cluster-port",
            Integer.toString(target.clusterPort),
            "--management-port",
            Integer.toString(target.managementPort),
            "--api-key",
            KEY,
            "--device",
            "cpu",
            "--data-dir",
            data.toString()));
    ProcessBuilder pb =
        new ProcessBuilder(cmd)
            .redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
    pb.environment().put("GOMP_SPINCOUNT", "1000"); // as the ./troupe launcher
    process = pb.start();
    long deadline = System.nanoTime() + Duration.ofMinutes(5).toNanos();
    while (!healthy()) {
      if (!process.isAlive())
        throw new IllegalStateException("the node exited with " + process.exitValue() + "; " + log);
      if (System.nanoTime() > deadline)
        throw new IllegalStateException("the node did not become healthy; see " + log);
      Thread.sleep(500);
    }
  }

  boolean alive() {
    return process.isAlive();
  }

  /** {@code GET /health} answers 200 within 30 s. */
  boolean healthy() {
    try {
      HttpResponse<Void> r =
          HttpClient.newHttpClient()
              .send(
                  HttpRequest.newBuilder(URI.create(target.base() + "/health"))
                      .timeout(Duration.ofSeconds(30))
                      .build(),
                  HttpResponse.BodyHandlers.discarding());
      return r.statusCode() == 200;
    } catch (Exception e) {
      return false;
    }
  }

  /** SIGKILL, then a fresh JVM on the same data directory and ports. */
  void killAndRestart() throws Exception {
    process.destroyForcibly().waitFor();
    launch();
  }

  @Override
  public void close() throws Exception {
    if (process != null && process.isAlive()) {
      process.destroy();
      if (!process.waitFor(60, java.util.concurrent.TimeUnit.SECONDS))
        process.destroyForcibly().waitFor();
    }
  }
}
