package dev.troupe.bench.data;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.troupe.gateway.http.ApiRoutes;
import dev.troupe.gateway.http.GatewayServer;
import dev.troupe.gateway.http.GatewaySettings;
import dev.troupe.gateway.preview.PreviewContext;
import dev.troupe.gateway.preview.PreviewRoutes;
import dev.troupe.node.DataEntities;
import dev.troupe.persistence.Persistence;
import dev.troupe.persistence.PersistenceInit;
import dev.troupe.persistence.PersistenceSettings;
import dev.troupe.protocol.cluster.LargeMessages;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Join;

/**
 * Logging throughput of one node on the embedded default (H2 file under a temporary data dir):
 * {@code clients} concurrent HTTP clients POST {@code requests} log requests of {@code groups}
 * groups each through the full path (HTTP, auth, streamed parse and validation, TrajectoryLog
 * entity, trajectory store, journal). Prints groups/s and MB/s of request bodies; then one big
 * request ({@code bigMb} MB) with the peak heap used while it is handled.
 *
 * <p>Usage: {@code LogBench [requests=200] [clients=4] [groups=16] [trajectories=4]
 * [messageBytes=800] [bigMb=50] [models=1]}: with several models, client {@code i} logs to model
 * {@code i % models} (each model's log is one entity, so one model's appends are sequential).
 */
public final class LogBench {
  /** The log endpoint's per-request bound on groups. */
  private static final int MAX_GROUPS = 10_000;

  private LogBench() {}

  public static void main(String[] args) throws Exception {
    int requests = arg(args, 0, 200);
    int clients = arg(args, 1, 4);
    int groups = arg(args, 2, 16);
    int trajectories = arg(args, 3, 4);
    int messageBytes = arg(args, 4, 800);
    int bigMb = arg(args, 5, 50);
    int models = arg(args, 6, 1);

    // Per-statement DEBUG logging (Slick, Hikari) would be what is measured otherwise.
    ((ch.qos.logback.classic.Logger)
            org.slf4j.LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME))
        .setLevel(ch.qos.logback.classic.Level.WARN);
    Path dir = Files.createTempDirectory("troupe-logbench");
    PersistenceSettings settings = PersistenceSettings.h2(dir.resolve("troupe"));
    PersistenceInit.ensureSchema(settings);
    Config config =
        Persistence.configFor(settings)
            .withFallback(LargeMessages.config())
            .withFallback(
                ConfigFactory.parseString(
                    """
                    pekko.actor.provider = cluster
                    pekko.remote.artery.canonical.hostname = 127.0.0.1
                    pekko.remote.artery.canonical.port = 0
                    pekko.cluster.roles = [gateway, trainer]
                    pekko.loglevel = WARNING
                    troupe.models = [{ name = "base", path = "demo" }]
                    """))
            .withFallback(ConfigFactory.load());
    ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), "logbench", config);
    try {
      Cluster.get(system).manager().tell(Join.create(Cluster.get(system).selfMember().address()));
      DataEntities.init(system, settings);
      GatewaySettings gs = GatewaySettings.of(0, List.of("bench"));
      var route =
          ApiRoutes.builder(gs)
              .addAll(PreviewRoutes.all(PreviewContext.sharded(system, Duration.ofSeconds(60))))
              .build();
      int port =
          GatewayServer.bind(system, gs, route)
              .toCompletableFuture()
              .get(30, TimeUnit.SECONDS)
              .localAddress()
              .getPort();
      String base = "http://127.0.0.1:" + port;
      HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

      List<String> modelIds = new ArrayList<>();
      for (int m = 0; m < models; m++) modelIds.add(createModel(http, base, "logbench-" + m));
      String modelId = modelIds.get(0);
      byte[] body = logBody(groups, trajectories, messageBytes).getBytes(StandardCharsets.UTF_8);
      // Warm-up: JIT, pools, the entities' first recovery.
      for (int i = 0; i < 20; i++) post(http, base, modelIds.get(i % models), body);

      AtomicLong next = new AtomicLong();
      List<Thread> threads = new ArrayList<>();
      long t0 = System.nanoTime();
      for (int c = 0; c < clients; c++) {
        String target = modelIds.get(c % models);
        Thread t =
            new Thread(
                () -> {
                  while (next.getAndIncrement() < requests) post(http, base, target, body);
                });
        t.start();
        threads.add(t);
      }
      for (Thread t : threads) t.join();
      double seconds = (System.nanoTime() - t0) / 1e9;
      double mb = (double) requests * body.length / 1e6;
      System.out.printf(
          Locale.ROOT,
          "logging: %d requests x %d groups x %d trajectories (%d B/request), %d clients, %d"
              + " models: %.2f s, %.0f requests/s, %.0f groups/s, %.1f MB/s%n",
          requests,
          groups,
          trajectories,
          body.length,
          clients,
          models,
          seconds,
          requests / seconds,
          requests * (double) groups / seconds,
          mb / seconds);

      if (bigMb > 0) big(http, base, modelId, bigMb, trajectories, messageBytes);
    } finally {
      system.terminate();
      system.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
    }
  }

  /** One request of about {@code mb} MB; the peak heap is sampled while it is handled. */
  private static void big(
      HttpClient http, String base, String modelId, int mb, int trajectories, int messageBytes)
      throws Exception {
    // One request holds at most 10,000 groups (docs/api.md, Limits): larger groups when needed.
    int perGroup = trajectories;
    String group = group(perGroup, messageBytes, 0);
    while ((long) mb * 1_000_000 / (group.length() + 1) > MAX_GROUPS)
      group = group(perGroup *= 2, messageBytes, 0);
    int n = (int) ((long) mb * 1_000_000 / (group.length() + 1));
    StringBuilder sb =
        new StringBuilder(mb * 1_000_000 + 1024)
            .append("{\"split\":\"val\",\"trajectory_groups\":[");
    for (int i = 0; i < n; i++) sb.append(i == 0 ? "" : ",").append(group);
    byte[] body = sb.append("]}").toString().getBytes(StandardCharsets.UTF_8);
    sb = null;
    MemoryMXBean mem = ManagementFactory.getMemoryMXBean();
    System.gc();
    long baseline = mem.getHeapMemoryUsage().getUsed();
    AtomicLong peak = new AtomicLong(baseline);
    Thread sampler =
        new Thread(
            () -> {
              while (!Thread.currentThread().isInterrupted()) {
                peak.accumulateAndGet(mem.getHeapMemoryUsage().getUsed(), Math::max);
                try {
                  Thread.sleep(2);
                } catch (InterruptedException e) {
                  return;
                }
              }
            });
    sampler.setDaemon(true);
    sampler.start();
    long t0 = System.nanoTime();
    int status = post(http, base, modelId, body);
    double seconds = (System.nanoTime() - t0) / 1e9;
    sampler.interrupt();
    System.out.printf(
        Locale.ROOT,
        "big request: %.1f MB, %d groups, status %d, %.2f s (%.1f MB/s); heap in use before %.0f"
            + " MB, peak %.0f MB (+%.0f MB = %.1fx the payload; the client's copy of the body is"
            + " %.0f MB of it); max heap %.0f MB%n",
        body.length / 1e6,
        n,
        status,
        seconds,
        body.length / 1e6 / seconds,
        baseline / 1e6,
        peak.get() / 1e6,
        (peak.get() - baseline) / 1e6,
        (peak.get() - baseline) / (double) body.length,
        body.length / 1e6,
        mem.getHeapMemoryUsage().getMax() / 1e6);
  }

  private static String createModel(HttpClient http, String base, String name) throws Exception {
    HttpResponse<String> r =
        http.send(
            HttpRequest.newBuilder(URI.create(base + "/v1/preview/models"))
                .header("Authorization", "Bearer bench")
                .header("Content-Type", "application/json")
                .POST(
                    HttpRequest.BodyPublishers.ofString(
                        "{\"project\":\"bench\",\"name\":\""
                            + name
                            + "\",\"base_model\":\"base\",\"return_existing\":true}"))
                .build(),
            HttpResponse.BodyHandlers.ofString());
    if (r.statusCode() != 200) throw new IllegalStateException("create failed: " + r.body());
    String b = r.body();
    int i = b.indexOf("\"id\":\"") + 6;
    return b.substring(i, b.indexOf('"', i));
  }

  private static int post(HttpClient http, String base, String modelId, byte[] body) {
    try {
      HttpResponse<String> r =
          http.send(
              HttpRequest.newBuilder(URI.create(base + "/v1/preview/models/" + modelId + "/log"))
                  .timeout(Duration.ofSeconds(300))
                  .header("Authorization", "Bearer bench")
                  .header("Content-Type", "application/json")
                  .POST(HttpRequest.BodyPublishers.ofByteArray(body))
                  .build(),
              HttpResponse.BodyHandlers.ofString());
      if (r.statusCode() != 200)
        throw new IllegalStateException("log failed " + r.statusCode() + ": " + r.body());
      return r.statusCode();
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  static String logBody(int groups, int trajectories, int messageBytes) {
    StringBuilder sb = new StringBuilder("{\"split\":\"train\",\"trajectory_groups\":[");
    for (int g = 0; g < groups; g++)
      sb.append(g == 0 ? "" : ",").append(group(trajectories, messageBytes, g));
    return sb.append("]}").toString();
  }

  /**
   * A group shaped like ART's: a user prompt, an assistant choice with logprobs, reward, metrics.
   */
  static String group(int trajectories, int messageBytes, int seed) {
    StringBuilder sb = new StringBuilder("{\"trajectories\":[");
    String text = "lorem ipsum ".repeat(Math.max(1, messageBytes / 24));
    for (int t = 0; t < trajectories; t++) {
      sb.append(t == 0 ? "" : ",")
          .append(
              "{\"messages_and_choices\":[{\"role\":\"system\",\"content\":\"You are a solver.\"},")
          .append("{\"role\":\"user\",\"content\":\"")
          .append(text)
          .append("\"},")
          .append(
              "{\"finish_reason\":\"stop\",\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"")
          .append(text)
          .append(
              "\"},\"logprobs\":{\"content\":[{\"token\":\"token_id:42\",\"logprob\":-0.25,\"bytes\":[52,50],\"top_logprobs\":[]}]}}],")
          .append("\"reward\":")
          .append((seed * 7 + t) % 5 / 4.0)
          .append(",\"metrics\":{\"correct\":")
          .append(t % 2 == 0)
          .append(",\"turns\":2},")
          .append("\"metadata\":{\"puzzle\":\"p")
          .append(seed)
          .append("\"},\"logs\":[]}");
    }
    return sb.append("]}").toString();
  }

  private static int arg(String[] args, int i, int dflt) {
    return args.length > i ? Integer.parseInt(args[i]) : dflt;
  }
}
