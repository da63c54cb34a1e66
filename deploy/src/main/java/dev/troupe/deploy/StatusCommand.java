package dev.troupe.deploy;

import dev.troupe.protocol.Json;
import dev.troupe.protocol.api.cluster.ClusterResponse;
import dev.troupe.protocol.api.preview.training.TrainingJobSummary;
import java.io.IOException;
import java.io.PrintStream;
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
import java.util.Map;

/**
 * {@code troupe status}: the cluster view ({@code GET /v1/cluster}) as tables in the terminal, as
 * {@code ray status} and {@code kubectl get} print theirs — nodes with their roles and status,
 * model replicas with their node, state and load, training jobs, trajectory logs, and what did not
 * answer. {@code --watch} prints it again every few seconds.
 */
final class StatusCommand {
  static final String USAGE =
      """
      Usage: troupe status [options]
        --url URL         the gateway to ask (default http://localhost:8000)
        --api-key KEY     its API key (default: the first of TROUPE_API_KEYS, else the key file
                          <data-dir>/api-key a node generated)
        --data-dir DIR    where to find that key file (default ./data)
        --watch [SECONDS] print again every SECONDS (default 2) until interrupted
        -h, --help        this text
      """;

  private StatusCommand() {}

  /** What the flags say. */
  record Options(URI url, String apiKey, Duration watch) {}

  /**
   * Runs the command; returns the exit status: 0, 1 when the gateway cannot be read, 2 for bad
   * flags.
   */
  static int run(List<String> args, String envKeys, PrintStream out, PrintStream err) {
    Options o;
    try {
      o = parse(args, envKeys);
    } catch (IllegalArgumentException e) {
      err.println("troupe status: " + e.getMessage() + "\n\n" + USAGE.stripTrailing());
      return 2;
    }
    if (o == null) {
      out.println(USAGE.stripTrailing());
      return 0;
    }
    HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    while (true) {
      String text;
      try {
        text = render(fetch(http, o));
      } catch (IOException | RuntimeException e) {
        err.println("troupe status: " + e.getMessage());
        if (o.watch() == null) return 1;
        text = null;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return 1;
      }
      if (text != null) {
        if (o.watch() != null) out.print("\033[H\033[2J"); // clear the terminal
        out.print(text);
        out.flush();
      }
      if (o.watch() == null) return 0;
      try {
        Thread.sleep(o.watch().toMillis());
      } catch (InterruptedException e) {
        return 0;
      }
    }
  }

  /** The options, or null when help was asked for. */
  static Options parse(List<String> args, String envKeys) {
    URI url = URI.create("http://localhost:8000");
    String key = null;
    Path dataDir = Path.of("data");
    Duration watch = null;
    for (int i = 0; i < args.size(); i++) {
      String a = args.get(i);
      String value = null;
      int eq = a.indexOf('=');
      if (a.startsWith("--") && eq > 0) {
        value = a.substring(eq + 1);
        a = a.substring(0, eq);
      }
      switch (a) {
        case "-h", "--help" -> {
          return null;
        }
        case "--url" -> url = URI.create(trimSlash(value != null ? value : next(args, ++i, a)));
        case "--api-key" -> key = value != null ? value : next(args, ++i, a);
        case "--data-dir" -> dataDir = Path.of(value != null ? value : next(args, ++i, a));
        case "--watch" -> {
          String seconds = value;
          if (seconds == null && i + 1 < args.size() && args.get(i + 1).matches("\\d+(\\.\\d+)?"))
            seconds = args.get(++i);
          double s = seconds == null ? 2 : Double.parseDouble(seconds);
          if (!(s > 0)) throw new IllegalArgumentException("--watch takes a positive number");
          watch = Duration.ofMillis((long) (s * 1000));
        }
        default -> throw new IllegalArgumentException("unknown option " + a);
      }
    }
    if (url.getScheme() == null || url.getHost() == null)
      throw new IllegalArgumentException("--url must be like http://host:port");
    if (key == null && envKeys != null && !envKeys.isBlank()) key = envKeys.split(",")[0].trim();
    if (key == null) {
      Path file = dataDir.resolve(ApiKeys.FILE);
      try {
        if (Files.isRegularFile(file)) key = Files.readString(file, StandardCharsets.UTF_8).trim();
      } catch (IOException e) {
        throw new IllegalArgumentException("cannot read the key file " + file + ": " + e);
      }
    }
    return new Options(url, key == null || key.isEmpty() ? null : key, watch);
  }

  private static String next(List<String> args, int i, String flag) {
    if (i >= args.size()) throw new IllegalArgumentException(flag + " needs a value");
    return args.get(i);
  }

  private static String trimSlash(String url) {
    return url.endsWith("/") ? url.substring(0, url.length() - 1) : url;
  }

  static ClusterResponse fetch(HttpClient http, Options o)
      throws IOException, InterruptedException {
    HttpRequest.Builder b =
        HttpRequest.newBuilder(URI.create(o.url() + "/v1/cluster")).timeout(Duration.ofSeconds(30));
    if (o.apiKey() != null) b.header("Authorization", "Bearer " + o.apiKey());
    HttpResponse<String> r;
    try {
      r = http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    } catch (IOException e) {
      throw new IOException("cannot reach " + o.url() + " (" + e + ")", e);
    }
    if (r.statusCode() == 401)
      throw new IOException(
          o.url() + " refused the API key (give it with --api-key or TROUPE_API_KEYS)");
    if (r.statusCode() != 200)
      throw new IOException(o.url() + "/v1/cluster answered " + r.statusCode() + ": " + r.body());
    return Json.mapper().readValue(r.body(), ClusterResponse.class);
  }

  // ------------------------------------------------------------------ the tables

  static String render(ClusterResponse c) {
    StringBuilder out = new StringBuilder();
    Table nodes = new Table("NODE", "STATUS", "REACHABLE", "ROLES", "UP", "HEAP", "REPLICAS");
    for (ClusterResponse.Member m : c.members())
      nodes.row(
          m.node() + (m.node().equals(c.leader()) ? " (leader)" : ""),
          m.status() + (m.draining() ? ", draining" : ""),
          m.reachable() ? "yes" : "NO",
          String.join(",", m.roles()),
          m.upSince() == null ? "-" : age(c.observedAt() - m.upSince()),
          m.jvm() == null
              ? "-"
              : (m.jvm().heapUsedBytes() >> 20) + "/" + (m.jvm().heapMaxBytes() >> 20) + " MiB",
          m.replicas().isEmpty() ? "-" : String.join(",", m.replicas()));
    out.append("NODES (gateway ").append(c.gateway()).append(")\n").append(nodes).append('\n');

    Table replicas =
        new Table(
            "REPLICA",
            "NODE",
            "STATE",
            "ROLE",
            "DEVICE",
            "RUNNING",
            "WAITING",
            "KV",
            "PREFIX HITS",
            "PREFILL TOK/S",
            "DECODE TOK/S",
            "ADAPTERS");
    for (ClusterResponse.Replica r : c.replicas())
      replicas.row(
          r.id(),
          r.node() == null ? "-" : r.node(),
          r.state() + (r.reason() == null ? "" : ": " + r.reason()),
          r.kvRole() == null ? "-" : r.kvRole(),
          r.device() == null
              ? "-"
              : r.device().kind().equals("cuda")
                  ? "cuda:" + r.device().index() + " " + r.device().name()
                  : "cpu",
          r.requests() == null ? "-" : Integer.toString(r.requests().running()),
          r.requests() == null ? "-" : Integer.toString(r.requests().waiting()),
          r.kvCache() == null ? "-" : percent(r.kvCache().usage()),
          r.prefixCache() == null ? "-" : percent(r.prefixCache().hitRate()),
          r.throughput() == null ? "-" : fixed(r.throughput().prefillTokensPerSecond(), 1),
          r.throughput() == null ? "-" : fixed(r.throughput().decodeTokensPerSecond(), 1),
          r.adapters().isEmpty()
              ? "-"
              : String.join(
                  ",", r.adapters().stream().map(ClusterResponse.Adapter::name).toList()));
    out.append("REPLICAS\n").append(replicas).append('\n');

    Map<String, Integer> counts = c.trainingJobs().counts();
    List<String> byStatus = new ArrayList<>();
    counts.forEach((s, n) -> byStatus.add(s + " " + n));
    out.append("TRAINING JOBS")
        .append(byStatus.isEmpty() ? "" : " (" + String.join(", ", byStatus) + ")")
        .append('\n');
    if (c.trainingJobs().recent().isEmpty()) out.append("  none\n");
    else {
      Table jobs =
          new Table("JOB", "MODEL", "STATUS", "STEPS", "LOSS", "REWARD", "TOKENS/S", "CREATED");
      for (TrainingJobSummary j : c.trainingJobs().recent())
        jobs.row(
            j.id(),
            j.modelId(),
            j.status() + (j.error() == null ? "" : ": " + j.error()),
            Integer.toString(j.gradientSteps()),
            metric(j, "loss", 4),
            metric(j, "reward", 3),
            metric(j, "tokens_per_second", 0),
            age(c.observedAt() - j.createdAt()) + " ago");
      out.append(jobs);
    }
    if (!c.trajectoryLogs().isEmpty()) {
      Table logs = new Table("MODEL", "SPLIT", "GROUPS", "TRAJECTORIES");
      for (ClusterResponse.TrajectoryLog l : c.trajectoryLogs())
        logs.row(l.model(), l.split(), Long.toString(l.groups()), Long.toString(l.trajectories()));
      out.append('\n').append("TRAJECTORY LOGS\n").append(logs);
    }
    if (!c.unanswered().isEmpty()) {
      out.append("\nUNANSWERED\n");
      for (String u : c.unanswered()) out.append("  ").append(u).append('\n');
    }
    return out.toString();
  }

  private static String metric(TrainingJobSummary j, String name, int digits) {
    Double v = j.latestMetrics().get(name);
    return v == null ? "-" : fixed(v, digits);
  }

  private static String fixed(double v, int digits) {
    return String.format(Locale.ROOT, "%." + digits + "f", v);
  }

  private static String percent(double share) {
    return String.format(Locale.ROOT, "%.1f%%", 100 * share);
  }

  /** A duration in seconds as {@code 42s}, {@code 7m}, {@code 3h}, {@code 2d}. */
  static String age(long seconds) {
    long s = Math.max(0, seconds);
    if (s < 120) return s + "s";
    if (s < 7200) return s / 60 + "m";
    if (s < 172800) return s / 3600 + "h";
    return s / 86400 + "d";
  }

  /** Left-aligned columns, two spaces apart, each as wide as its widest cell. */
  static final class Table {
    private final List<String[]> rows = new ArrayList<>();

    Table(String... header) {
      rows.add(header);
    }

    void row(String... cells) {
      rows.add(cells);
    }

    @Override
    public String toString() {
      int columns = rows.get(0).length;
      int[] width = new int[columns];
      for (String[] r : rows)
        for (int i = 0; i < columns; i++) width[i] = Math.max(width[i], r[i].length());
      StringBuilder b = new StringBuilder();
      for (String[] r : rows) {
        StringBuilder line = new StringBuilder("  ");
        for (int i = 0; i < columns; i++) {
          line.append(r[i]);
          if (i < columns - 1) line.append(" ".repeat(width[i] - r[i].length() + 2));
        }
        b.append(line.toString().stripTrailing()).append('\n');
      }
      return b.toString();
    }
  }
}
