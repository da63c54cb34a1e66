package dev.troupe.bench.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.typesafe.config.ConfigFactory;
import dev.troupe.deploy.LaunchOptions;
import dev.troupe.deploy.TroupeNode;
import dev.troupe.engine.core.EngineRequest;
import dev.troupe.engine.core.EngineSettings;
import dev.troupe.engine.core.Rejection;
import dev.troupe.engine.output.RequestUpdate;
import dev.troupe.engine.serving.Engine;
import dev.troupe.engine.serving.Engines;
import dev.troupe.protocol.cluster.GenerationRequest;
import dev.troupe.protocol.cluster.SamplingParams;
import dev.troupe.protocol.cluster.ServedModels.ServedModel;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;

/**
 * Load on the whole service: streaming chat completions through HTTP, the gateway, the cluster
 * (sharding, CBOR messages) and a model worker, at concurrency 1, 8 and 32 (closed loop: each
 * client sends its next request when the previous stream ends). Reports time to first token
 * (p50/p99), inter-token latency (p50/p99 of per-request mean gaps) and output tokens/s; then
 * drives the same model's {@link Engine} directly with the same load, for the engine's own tokens/s
 * and TTFT, so the difference is what gateway and cluster cost.
 *
 * <p>Usage: {@code LoadBench [--model DIR] [--max-tokens N] [--requests-per-client N] [--rounds N]
 * [--levels 1,8,32]}. Not a test: results go to docs/benchmarks.md.
 */
public final class LoadBench {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String KEY = "sk-bench";

  record Options(String modelDir, int maxTokens, int perClient, int rounds, List<Integer> levels) {}

  /** One request's timings, nanoseconds from its start. */
  record Sample(long ttft, long last, int tokens) {
    double itlMs() {
      return tokens > 1 ? (last - ttft) / 1e6 / (tokens - 1) : Double.NaN;
    }
  }

  /**
   * @param cpuSeconds CPU time of the whole process during the run (all threads: for the gateway
   *     path this includes the load generator's own HTTP client and JSON parsing)
   */
  record Result(
      int concurrency,
      int requests,
      double seconds,
      double cpuSeconds,
      double clientCpuSeconds,
      List<Sample> samples) {
    double cpuMicrosPerToken() {
      return cpuSeconds * 1e6 / tokens();
    }

    /** Process CPU minus the load generator's own threads (HTTP client, SSE parsing). */
    double serverCpuMicrosPerToken() {
      return (cpuSeconds - clientCpuSeconds) * 1e6 / tokens();
    }

    long tokens() {
      return samples.stream().mapToLong(Sample::tokens).sum();
    }

    double tokensPerSecond() {
      return tokens() / seconds;
    }

    double ttftMs(double q) {
      return quantile(samples.stream().map(s -> s.ttft() / 1e6).toList(), q);
    }

    double itlMs(double q) {
      return quantile(samples.stream().map(Sample::itlMs).filter(d -> !d.isNaN()).toList(), q);
    }
  }

  public static void main(String[] args) throws Exception {
    Options o = parse(args);
    System.out.printf(
        Locale.ROOT,
        "cores=%d java=%s model=%s max_tokens=%d requests/client=%d%n",
        Runtime.getRuntime().availableProcessors(),
        System.getProperty("java.version"),
        o.modelDir() == null ? "demo" : o.modelDir(),
        o.maxTokens(),
        o.perClient());

    List<Result> gateway = new ArrayList<>();
    List<Result> engine = new ArrayList<>();
    Path data = Files.createTempDirectory("troupe-bench");
    String dir = o.modelDir() == null ? "demo" : o.modelDir();
    List<String> flags =
        List.of(
            "--port",
            "0",
            "--cluster-port",
            "0",
            "--management-port",
            "-1",
            "--api-key",
            KEY,
            "--data-dir",
            data.toString(),
            "--model",
            "bench=" + dir);
    EngineSettings settings =
        EngineSettings.fromConfig(ConfigFactory.load().getConfig("troupe.worker.engine"));
    // The engine runs on one thread of its own, as a worker's runs on its pinned dispatcher.
    ExecutorService engineThread = Executors.newSingleThreadExecutor();
    // Both paths stay loaded; each round runs the gateway, then the engine alone, at one level,
    // so drifting machine load hits both alike. The median round is reported.
    try (TroupeNode node =
            TroupeNode.start(
                LaunchOptions.parse(flags, null),
                ConfigFactory.parseString(
                    "pekko.coordinated-shutdown.exit-jvm = off\n"
                        + "pekko.loglevel = WARNING\n"
                        + "troupe.worker.metrics-log-interval = 0s"),
                k -> {});
        Engine e = Engines.open(new ServedModel("bench", dir, 1, "fcfs"), settings)) {
      String url = "http://127.0.0.1:" + node.httpPort() + "/v1/chat/completions";
      HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
      // Warm-up (model load, JIT of both paths), not measured.
      for (int w = 0; w < 2; w++) {
        runHttp(http, url, o, 8, 3);
        engineThread.submit(() -> runEngine(e, o, 8, 3)).get();
      }
      for (int c : o.levels()) {
        List<Result> g = new ArrayList<>();
        List<Result> x = new ArrayList<>();
        for (int round = 0; round < o.rounds(); round++) {
          g.add(runHttp(http, url, o, c, o.perClient()));
          x.add(engineThread.submit(() -> runEngine(e, o, c, o.perClient())).get());
          System.out.printf(
              Locale.ROOT,
              "c=%d round %d: gateway %.1f tok/s %.0f CPU µs/token (server side %.0f), engine %.1f tok/s %.0f CPU µs/token%n",
              c,
              round,
              g.get(round).tokensPerSecond(),
              g.get(round).cpuMicrosPerToken(),
              g.get(round).serverCpuMicrosPerToken(),
              x.get(round).tokensPerSecond(),
              x.get(round).cpuMicrosPerToken());
        }
        gateway.add(median(g));
        engine.add(median(x));
      }
    } finally {
      engineThread.shutdown();
    }

    System.out.println();
    System.out.println(
        "| concurrency | requests | gateway tok/s | engine tok/s | gateway/engine | CPU µs/token gateway (server side) | CPU µs/token engine | TTFT p50 ms | TTFT p99 ms | engine TTFT p50 ms | ITL p50 ms | ITL p99 ms |");
    System.out.println("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (int i = 0; i < gateway.size(); i++) {
      Result g = gateway.get(i);
      Result e = engine.get(i);
      System.out.printf(
          Locale.ROOT,
          "| %d | %d | %.1f | %.1f | %.1f%% | %.0f (%.0f) | %.0f | %.0f | %.0f | %.0f | %.1f | %.1f |%n",
          g.concurrency(),
          g.requests(),
          g.tokensPerSecond(),
          e.tokensPerSecond(),
          100 * g.tokensPerSecond() / e.tokensPerSecond(),
          g.cpuMicrosPerToken(),
          g.serverCpuMicrosPerToken(),
          e.cpuMicrosPerToken(),
          g.ttftMs(0.5),
          g.ttftMs(0.99),
          e.ttftMs(0.5),
          g.itlMs(0.5),
          g.itlMs(0.99));
    }
  }

  /** {@code c} clients, each streaming {@code perClient} requests back to back. */
  static Result runHttp(HttpClient http, String url, Options o, int c, int perClient)
      throws Exception {
    AtomicInteger threads = new AtomicInteger();
    ExecutorService pool =
        Executors.newFixedThreadPool(
            c, r -> new Thread(r, "loadbench-client-" + threads.incrementAndGet()));
    List<Sample> samples = Collections.synchronizedList(new ArrayList<>());
    AtomicInteger ids = new AtomicInteger();
    long start = System.nanoTime();
    long cpu0 = processCpuNanos();
    long client0 = clientCpuNanos();
    List<Future<?>> clients = new ArrayList<>();
    for (int i = 0; i < c; i++)
      clients.add(
          pool.submit(
              () -> {
                for (int r = 0; r < perClient; r++)
                  samples.add(stream(http, url, o, ids.incrementAndGet()));
                return null;
              }));
    for (Future<?> f : clients) f.get();
    double seconds = (System.nanoTime() - start) / 1e9;
    double cpu = (processCpuNanos() - cpu0) / 1e9;
    double client = (clientCpuNanos() - client0) / 1e9;
    pool.shutdown();
    return new Result(c, c * perClient, seconds, cpu, client, samples);
  }

  static Sample stream(HttpClient http, String url, Options o, int id) throws Exception {
    String body =
        JSON.writeValueAsString(
            Map.of(
                "model",
                "bench",
                "messages",
                List.of(Map.of("role", "user", "content", "Request " + id + ": tell me a story.")),
                "max_tokens",
                o.maxTokens(),
                "ignore_eos",
                true,
                "temperature",
                0,
                "stream",
                true,
                "return_token_ids",
                true));
    HttpRequest request =
        HttpRequest.newBuilder(URI.create(url))
            .header("Content-Type", "application/json")
            .header("Authorization", "Bearer " + KEY)
            .POST(HttpRequest.BodyPublishers.ofString(body))
            .build();
    long t0 = System.nanoTime();
    HttpResponse<Stream<String>> response = http.send(request, HttpResponse.BodyHandlers.ofLines());
    if (response.statusCode() != 200)
      throw new IllegalStateException(
          "HTTP " + response.statusCode() + ": " + String.join("\n", response.body().toList()));
    long first = -1, last = -1;
    int tokens = 0;
    try (Stream<String> lines = response.body()) {
      for (String line : (Iterable<String>) lines::iterator) {
        if (!line.startsWith("data: ") || line.equals("data: [DONE]")) continue;
        JsonNode chunk = JSON.readTree(line.substring(6));
        if (chunk.has("error")) throw new IllegalStateException(line);
        for (JsonNode choice : chunk.path("choices")) {
          int n = choice.path("token_ids").size();
          if (n == 0) continue;
          long now = System.nanoTime() - t0;
          if (first < 0) first = now;
          last = now;
          tokens += n;
        }
      }
    }
    return new Sample(first, last, tokens);
  }

  /** The engine alone: {@code c} requests in flight, refilled as they complete. */
  static Result runEngine(Engine e, Options o, int c, int perClient) {
    int total = c * perClient;
    Map<String, Long> startedAt = new HashMap<>();
    Map<String, long[]> times = new HashMap<>(); // first, last
    Map<String, Integer> counts = new HashMap<>();
    List<Sample> samples = new ArrayList<>();
    int submitted = 0, inFlight = 0;
    long start = System.nanoTime();
    long cpu0 = processCpuNanos();
    while (samples.size() < total) {
      while (inFlight < c && submitted < total) {
        String id = "e" + System.nanoTime() + "-" + submitted;
        SamplingParams p =
            SamplingParams.builder()
                .temperature(0.0)
                .maxTokens(o.maxTokens())
                .ignoreEos(true)
                .build();
        List<Map<String, Object>> messages =
            List.of(
                Map.of("role", "user", "content", "Request " + submitted + ": tell me a story."));
        // as a worker does it, but on this one thread: prepare, then queue
        EngineRequest prepared = e.inputs().process(GenerationRequest.chat(id, messages, p));
        Rejection refused = e.add(prepared.withAdapter(0, null, 0));
        if (refused != null) throw refused;
        startedAt.put(id, System.nanoTime());
        submitted++;
        inFlight++;
      }
      Engine.Step step = e.step();
      if (!step.failures().isEmpty()) throw step.failures().get(0).rejection();
      for (RequestUpdate u : step.updates()) {
        long now = System.nanoTime();
        String id = u.requestId();
        int n = u.choices().stream().mapToInt(x -> x.tokenIds().length).sum();
        if (n > 0) {
          long[] t = times.computeIfAbsent(id, k -> new long[] {now - startedAt.get(id), 0});
          t[1] = now - startedAt.get(id);
          counts.merge(id, n, Integer::sum);
        }
        if (u.finished()) {
          long[] t = times.remove(id);
          samples.add(new Sample(t[0], t[1], counts.remove(id)));
          inFlight--;
        }
      }
    }
    return new Result(
        c, total, (System.nanoTime() - start) / 1e9, (processCpuNanos() - cpu0) / 1e9, 0, samples);
  }

  static long processCpuNanos() {
    return ((com.sun.management.OperatingSystemMXBean)
            java.lang.management.ManagementFactory.getOperatingSystemMXBean())
        .getProcessCpuTime();
  }

  /** CPU time of the load generator's threads: its clients and the JDK HTTP client's. */
  static long clientCpuNanos() {
    java.lang.management.ThreadMXBean mx = java.lang.management.ManagementFactory.getThreadMXBean();
    long sum = 0;
    for (java.lang.management.ThreadInfo t : mx.getThreadInfo(mx.getAllThreadIds())) {
      if (t == null) continue;
      String name = t.getThreadName();
      if (name.startsWith("loadbench-client-") || name.startsWith("HttpClient-")) {
        long cpu = mx.getThreadCpuTime(t.getThreadId());
        if (cpu > 0) sum += cpu;
      }
    }
    return sum;
  }

  static Result median(List<Result> rounds) {
    List<Result> sorted = new ArrayList<>(rounds);
    sorted.sort(java.util.Comparator.comparingDouble(Result::tokensPerSecond));
    return sorted.get(sorted.size() / 2);
  }

  static double quantile(List<Double> values, double q) {
    if (values.isEmpty()) return Double.NaN;
    List<Double> sorted = new ArrayList<>(values);
    Collections.sort(sorted);
    int i = (int) Math.ceil(q * sorted.size()) - 1;
    return sorted.get(Math.max(0, Math.min(sorted.size() - 1, i)));
  }

  static Options parse(String[] args) {
    String model = null;
    int maxTokens = 32, perClient = 4, rounds = 3;
    List<Integer> levels = List.of(1, 8, 32);
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--model" -> model = args[++i];
        case "--max-tokens" -> maxTokens = Integer.parseInt(args[++i]);
        case "--requests-per-client" -> perClient = Integer.parseInt(args[++i]);
        case "--rounds" -> rounds = Integer.parseInt(args[++i]);
        case "--levels" -> levels = Stream.of(args[++i].split(",")).map(Integer::parseInt).toList();
        default -> throw new IllegalArgumentException("unknown argument " + args[i]);
      }
    }
    return new Options(model, maxTokens, perClient, rounds, levels);
  }
}
