package dev.troupe.deploy.slurm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.deploy.LaunchOptions;
import dev.troupe.deploy.Main;
import dev.troupe.protocol.Json;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.jar.Attributes;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code deploy/slurm/troupe.sbatch} submitted with {@code sbatch} to a real Slurm ({@link
 * LocalSlurm}: Debian's slurmctld and slurmd, one node, this host), as a user would: the scripts
 * and the {@code troupe} launcher are the repository's, copied into a directory laid out like a
 * checkout whose {@code deploy/target/troupe.jar} runs {@link Main} from this build's classpath.
 * Skipped only where Slurm is not installed ({@code apt-get install slurmctld slurmd}).
 *
 * <ul>
 *   <li>Dry run on two (fake) GPUs: each worker task takes its own GPU.
 *   <li>On the CPU ({@code TROUPE_DEVICE=cpu}, no GPUs): the gateway answers a chat completion; the
 *       worker runs on all the CPUs of its task ({@code --cpus-per-task}); SIGTERM to the gateway's
 *       step ({@code scancel --signal=TERM}) drains it, the script stops the workers the same way,
 *       and the job completes with exit code 0.
 *   <li>A step that fails (the gateway's port is taken) ends the job with its exit code instead of
 *       leaving the workers waiting for their seed until the time limit.
 * </ul>
 */
class SlurmJobTest {
  private static final String KEY = "sk-slurm";
  private static final Duration UP = Duration.ofMinutes(3);

  @TempDir static Path dir;
  private static LocalSlurm slurm;
  private static Path root;
  private final HttpClient http =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

  @BeforeAll
  static void startSlurm() throws Exception {
    List<String> missing = new ArrayList<>();
    Optional<LocalSlurm> started =
        LocalSlurm.start(Files.createDirectory(dir.resolve("slurm")), missing);
    Assumptions.assumeTrue(
        started.isPresent(),
        "Slurm is not installed (apt-get install slurmctld slurmd): " + missing);
    slurm = started.get();
    assertTrue(slurm.cpus() >= 2, "two tasks of one CPU each need two CPUs: " + slurm.cpus());
    root = checkout(dir.resolve("troupe"));
  }

  @AfterAll
  static void stopSlurm() throws Exception {
    if (slurm != null) slurm.close();
  }

  @Test
  void eachWorkerTaskTakesItsOwnGpu() throws Exception {
    Path out = dir.resolve("dry-run.out");
    String job =
        slurm.sbatch(
            root,
            root.resolve("deploy/slurm/troupe.sbatch"),
            env(Map.of("TROUPE_DRY_RUN", "1", "TROUPE_DATA", dir.resolve("dry").toString())),
            out,
            "--nodes=1",
            "--ntasks-per-node=2",
            "--cpus-per-task=1",
            "--gpus-per-node=2");
    assertEquals(new LocalSlurm.Job("COMPLETED", "0:0"), slurm.awaitEnd(job, UP), read(out));

    Map<String, LaunchOptions> tasks = dryRun(read(out));
    assertEquals(List.of("gateway/0", "worker/0", "worker/1"), List.copyOf(tasks.keySet()));
    assertEquals("cuda:0", tasks.get("worker/0").device().device());
    assertEquals("cuda:1", tasks.get("worker/1").device().device());
    for (LaunchOptions task : tasks.values()) {
      assertEquals(2, task.replicasOf("demo"), "one replica per GPU task");
      assertEquals(slurm.node(), task.host());
    }
    String seed = slurm.node() + ":" + tasks.get("gateway/0").clusterPort();
    assertEquals(List.of(seed), tasks.get("worker/0").seedNodes());
    assertEquals(List.of(seed), tasks.get("worker/1").seedNodes());
  }

  @Test
  void onTheCpuTheGatewayServesAndASigtermDrainsTheWholeJob() throws Exception {
    int port = LocalSlurm.freePort();
    int cpus = 2;
    Path out = dir.resolve("cpu.out");
    String job =
        slurm.sbatch(
            root,
            root.resolve("deploy/slurm/troupe.sbatch"),
            env(
                Map.of(
                    "TROUPE_DEVICE",
                    "cpu",
                    "TROUPE_PORT",
                    Integer.toString(port),
                    "TROUPE_DATA",
                    dir.resolve("cpu").toString())),
            out,
            "--nodes=1",
            "--ntasks-per-node=1",
            "--cpus-per-task=" + cpus,
            "--gpus-per-node=0");
    LocalSlurm.await("the gateway is ready", UP, () -> status(port, "/health") == 200);

    HttpResponse<String> chat = chat(port);
    assertEquals(200, chat.statusCode(), chat.body());
    JsonNode usage = Json.mapper().readTree(chat.body()).path("usage");
    assertEquals(8, usage.path("completion_tokens").asInt(), chat.body());
    assertTrue(
        read(out).contains("CPU runner team: " + cpus + " threads"),
        "the worker runs on its task's " + cpus + " CPUs, not one: " + read(out));

    // SIGTERM to the gateway's step only, as `scancel --signal=TERM <job>.<step>`: it drains and
    // ends; the batch script then stops the workers the same way (`scancel --signal=TERM <job>`)
    // rather than leave them without their seed until the time limit.
    slurm.scancel(slurm.steps(job).get("troupe-gateway"), "--signal=TERM");
    assertEquals(new LocalSlurm.Job("COMPLETED", "0:0"), slurm.awaitEnd(job, UP), read(out));
    assertTrue(read(out).contains("demo#0: draining"), "the worker drained: " + read(out));
  }

  @Test
  void aFailedStepEndsTheJobWithItsExitCode() throws Exception {
    try (ServerSocket taken = new ServerSocket()) {
      taken.bind(new InetSocketAddress("0.0.0.0", 0));
      Path out = dir.resolve("failed.out");
      String job =
          slurm.sbatch(
              root,
              root.resolve("deploy/slurm/troupe.sbatch"),
              env(
                  Map.of(
                      "TROUPE_DEVICE",
                      "cpu",
                      "TROUPE_PORT",
                      Integer.toString(taken.getLocalPort()),
                      "TROUPE_DATA",
                      dir.resolve("failed").toString())),
              out,
              "--nodes=1",
              "--ntasks-per-node=2",
              "--cpus-per-task=1",
              "--gpus-per-node=0");
      LocalSlurm.Job end = slurm.awaitEnd(job, UP);
      assertEquals(new LocalSlurm.Job("FAILED", "1:0"), end, read(out));
      assertTrue(read(out).contains("for the HTTP API (--port)"), read(out));
    }
  }

  /** What every job here shares: the demo model, ports of its own, a small heap. */
  private static Map<String, String> env(Map<String, String> extra) throws IOException {
    Map<String, String> env = new HashMap<>();
    env.put("TROUPE_HOME", root.toString());
    env.put("TROUPE_MODEL", "demo=demo");
    env.put("TROUPE_API_KEYS", KEY);
    env.put("TROUPE_CLUSTER_PORT", Integer.toString(LocalSlurm.freePorts(3)));
    env.put("TROUPE_MANAGEMENT_PORT", Integer.toString(LocalSlurm.freePorts(3)));
    env.put("TROUPE_SHUTDOWN_TIMEOUT", "5");
    env.put("TROUPE_JAVA_OPTS", "-Xmx640m -Dtroupe.worker.metrics-log-interval=0s");
    env.put("JAVA", Path.of(System.getProperty("java.home"), "bin", "java").toString());
    env.putAll(extra);
    return env;
  }

  /**
   * A directory laid out as the scripts expect a checkout: the repository's launcher and Slurm
   * scripts, and as {@code deploy/target/troupe.jar} a jar that only names {@link Main} and this
   * test's classpath (the shaded jar is built after the tests).
   */
  private static Path checkout(Path at) throws IOException {
    Path repo = Path.of("..").toAbsolutePath().normalize();
    Files.createDirectories(at.resolve("deploy/slurm"));
    Files.createDirectories(at.resolve("deploy/target"));
    for (String file :
        List.of("troupe", "deploy/slurm/troupe.sbatch", "deploy/slurm/troupe-task.sh"))
      Files.copy(repo.resolve(file), at.resolve(file), StandardCopyOption.COPY_ATTRIBUTES);
    Manifest manifest = new Manifest();
    Attributes main = manifest.getMainAttributes();
    main.put(Attributes.Name.MANIFEST_VERSION, "1.0");
    main.put(Attributes.Name.MAIN_CLASS, Main.class.getName());
    main.put(
        Attributes.Name.CLASS_PATH,
        Stream.of(System.getProperty("java.class.path").split(java.io.File.pathSeparator))
            .map(p -> Path.of(p).toAbsolutePath().toUri().toString())
            .collect(Collectors.joining(" ")));
    try (OutputStream jar = Files.newOutputStream(at.resolve("deploy/target/troupe.jar"))) {
      new JarOutputStream(jar, manifest).close();
    }
    return at;
  }

  /**
   * The dry run's lines ({@code role/host/local-id env K=V} and {@code ... arg A}, interleaved
   * across tasks) as each task's flags, parsed by the launcher's parser; keyed {@code role/id}.
   */
  private static Map<String, LaunchOptions> dryRun(String output) {
    Map<String, List<String>> args = new HashMap<>();
    for (String line : output.lines().toList()) {
      String[] parts = line.split(" ", 3);
      if (parts.length == 3 && parts[1].equals("arg"))
        args.computeIfAbsent(parts[0], k -> new ArrayList<>()).add(parts[2]);
    }
    Map<String, LaunchOptions> tasks = new LinkedHashMap<>();
    args.keySet().stream()
        .sorted()
        .forEach(
            tag -> {
              List<String> a = args.get(tag);
              assertTrue(a.get(0).endsWith("/troupe") && a.get(1).equals("serve"), a.toString());
              String[] t = tag.split("/");
              tasks.put(t[0] + "/" + t[2], LaunchOptions.parse(a.subList(2, a.size()), null));
            });
    return tasks;
  }

  private int status(int port, String path) {
    try {
      HttpRequest get =
          HttpRequest.newBuilder(URI.create("http://" + slurm.node() + ":" + port + path))
              .timeout(Duration.ofSeconds(5))
              .build();
      return http.send(get, HttpResponse.BodyHandlers.discarding()).statusCode();
    } catch (IOException e) {
      return -1; // not listening yet
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return -1;
    }
  }

  private HttpResponse<String> chat(int port) throws Exception {
    String body =
        """
        {"model":"demo","messages":[{"role":"user","content":"Hello from Slurm"}],
         "max_tokens":8,"ignore_eos":true}""";
    HttpRequest post =
        HttpRequest.newBuilder(
                URI.create("http://" + slurm.node() + ":" + port + "/v1/chat/completions"))
            .header("Content-Type", "application/json")
            .header("Authorization", "Bearer " + KEY)
            .timeout(Duration.ofMinutes(2))
            .POST(HttpRequest.BodyPublishers.ofString(body))
            .build();
    return http.send(post, HttpResponse.BodyHandlers.ofString());
  }

  private static String read(Path file) throws IOException {
    return Files.exists(file) ? Files.readString(file) : "";
  }
}
