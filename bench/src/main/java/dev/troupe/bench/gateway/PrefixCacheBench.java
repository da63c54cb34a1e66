package dev.troupe.bench.gateway;

import com.typesafe.config.ConfigFactory;
import dev.troupe.bench.gateway.StreamedChats.Sample;
import dev.troupe.deploy.LaunchOptions;
import dev.troupe.deploy.TroupeNode;
import java.net.http.HttpClient;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * Prefix caching and cache-aware routing through the whole service (HTTP, gateway, cluster, two
 * model replicas on one node), in three parts:
 *
 * <ol>
 *   <li><b>TTFT of a long shared prefix</b>: a chat whose system prompt (~{@code --prefix-tokens})
 *       nobody has sent before (cold), then the same system prompt with another question (warm: a
 *       prefix-cache hit on the replica that holds it), pair after pair; beside it the same pairs
 *       on a node with {@code --no-enable-prefix-caching}, where the second is as cold as the
 *       first.
 *   <li><b>An RL-shaped load</b>: one step of rollouts as ART sends them, {@code --prompts} prompts
 *       × {@code --group} rollouts each (temperature 1, streamed, all in flight at once), every
 *       prompt behind one shared system prompt (~{@code --system-tokens}), against three nodes of
 *       two replicas each: cache-aware routing with prefix caching, round-robin with prefix
 *       caching, and round-robin without prefix caching. Every round uses a new system prompt (a
 *       new training step serves a new checkpoint, whose cache starts cold).
 *   <li><b>Multi-turn agents</b>, where the replica choice matters: {@code --conversations}
 *       conversations at once, each behind a system prompt of its own, {@code --turns} turns each,
 *       against the same three nodes; the TTFT of the turns after the first.
 * </ol>
 *
 * Each round runs the three variants one after the other, in an order rotated each round, so
 * drifting machine load hits all alike; per-round ratios against the uncached variant are reported
 * beside the pooled figures. The node's ask timeout is raised to 600 s: a rollout queued behind
 * others gets its first event only at its prefill.
 *
 * <p>Usage: {@code PrefixCacheBench [--model DIR] [--prefix-tokens N] [--pairs N] [--system-tokens
 * N] [--prompts N] [--group N] [--max-tokens N] [--rounds N] [--conversations N] [--turns N]}. Not
 * a test: results go to docs/benchmarks.md.
 */
public final class PrefixCacheBench {
  private static final String KEY = StreamedChats.KEY;
  private static final String MODEL = StreamedChats.MODEL;

  record Options(
      String modelDir,
      int prefixTokens,
      int pairs,
      int systemTokens,
      int prompts,
      int group,
      int maxTokens,
      int rounds,
      int conversations,
      int turns) {}

  /** A node under test and how its gateway routes and its workers cache. */
  record Variant(String name, TroupeNode node, String url) {}

  /** One variant's round: its wall time and the requests measured. */
  record Round(String variant, double seconds, List<Sample> samples) {
    long outputTokens() {
      return samples.stream().mapToLong(Sample::tokens).sum();
    }

    long promptTokens() {
      return samples.stream().mapToLong(Sample::promptTokens).sum();
    }

    long cachedTokens() {
      return samples.stream().mapToLong(Sample::cachedTokens).sum();
    }

    double outputPerSecond() {
      return outputTokens() / seconds;
    }

    double ttftMs(double q) {
      return StreamedChats.quantile(samples.stream().map(s -> s.ttft() / 1e6).toList(), q);
    }
  }

  public static void main(String[] args) throws Exception {
    Options o = parse(args);
    String dir = o.modelDir() == null ? "demo" : o.modelDir();
    System.out.printf(
        Locale.ROOT,
        "cores=%d java=%s model=%s %s%nuptime at start: %s%n",
        Runtime.getRuntime().availableProcessors(),
        System.getProperty("java.version"),
        dir,
        o,
        StreamedChats.uptime());
    HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    List<TroupeNode> nodes = new ArrayList<>();
    try {
      Variant aware = start(nodes, "cache-aware", dir, "cache-aware", true);
      Variant roundRobin = start(nodes, "round-robin", dir, "round-robin", true);
      Variant none = start(nodes, "no cache", dir, "round-robin", false);
      List<Variant> variants = List.of(aware, roundRobin, none);
      String tokenizeUrl = aware.url().replace("/v1/chat/completions", "/tokenize");

      // Warm-up (model load, JIT of every path, the replicas' first cache reports): not measured.
      for (Variant v : variants) {
        String system =
            StreamedChats.text(http, tokenizeUrl, o.systemTokens(), "warm-up " + v.name());
        rlRound(http, v, system, o);
      }

      ttftPart(http, tokenizeUrl, aware, none, o);
      rlPart(http, tokenizeUrl, variants, o);
      agentPart(http, tokenizeUrl, variants, o);
    } finally {
      for (int i = nodes.size() - 1; i >= 0; i--) nodes.get(i).close();
    }
    System.out.printf(Locale.ROOT, "uptime at end: %s%n", StreamedChats.uptime());
  }

  private static Variant start(
      List<TroupeNode> nodes, String name, String dir, String policy, boolean caching)
      throws Exception {
    Path data = Files.createTempDirectory("troupe-prefix-bench");
    List<String> flags =
        new ArrayList<>(
            List.of(
                "--roles",
                "gateway,worker",
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
                MODEL + "=" + dir,
                "--replicas",
                MODEL + "=2"));
    if (!caching) flags.add("--no-enable-prefix-caching");
    TroupeNode node =
        TroupeNode.start(
            LaunchOptions.parse(flags, null),
            ConfigFactory.parseString(
                "pekko.coordinated-shutdown.exit-jvm = off\n"
                    + "pekko.cluster.jmx.multi-mbeans-in-same-jvm = on\n"
                    + "pekko.loglevel = WARNING\n"
                    + "troupe.worker.metrics-log-interval = 0s\n"
                    // A rollout queued behind a step's worth of others gets its first event only
                    // at its prefill, which on 2 loaded cores can be after the default 30 s.
                    + "troupe.gateway.ask-timeout = 600s\n"
                    + "troupe.gateway.migration.attempt-timeout = 600s\n"
                    + "troupe.gateway.request-timeout = 900s\n"
                    + "troupe.gateway.routing.policy = "
                    + policy),
            k -> {});
    nodes.add(node);
    return new Variant(name, node, "http://127.0.0.1:" + node.httpPort() + "/v1/chat/completions");
  }

  /** Cold then warm TTFT of one long system prompt, pair by pair, with and without the cache. */
  private static void ttftPart(
      HttpClient http, String tokenizeUrl, Variant cached, Variant uncached, Options o)
      throws Exception {
    Map<String, List<Sample>> by = new LinkedHashMap<>();
    for (String k : List.of("cold", "warm", "uncached first", "uncached repeat"))
      by.put(k, new ArrayList<>());
    System.out.println();
    for (int p = 0; p < o.pairs(); p++) {
      String prefix = StreamedChats.text(http, tokenizeUrl, o.prefixTokens(), "prefix pair " + p);
      // alternate which node goes first, so load drift does not favour one
      for (int side = 0; side < 2; side++) {
        boolean onCached = (side == 0) == (p % 2 == 0);
        Variant v = onCached ? cached : uncached;
        Sample first =
            StreamedChats.chat(http, v.url(), prefix, "What is the first rule?", o.maxTokens(), 0);
        Thread.sleep(500); // the holder's cache report reaches the gateway (every 100 ms)
        Sample second =
            StreamedChats.chat(http, v.url(), prefix, "And the second rule?", o.maxTokens(), 0);
        by.get(onCached ? "cold" : "uncached first").add(first);
        by.get(onCached ? "warm" : "uncached repeat").add(second);
        System.out.printf(
            Locale.ROOT,
            "pair %d %s: first %.1f ms (%d prompt, %d cached, %s), second %.1f ms (%d cached, %s)%n",
            p,
            v.name(),
            first.ttft() / 1e6,
            first.promptTokens(),
            first.cachedTokens(),
            first.route(),
            second.ttft() / 1e6,
            second.cachedTokens(),
            second.route());
        Thread.sleep(200);
      }
    }
    System.out.println();
    System.out.println(
        "| request | n | prompt tokens | cached tokens (mean) | TTFT p50 ms | TTFT min–max ms |");
    System.out.println("|---|---|---|---|---|---|");
    for (var e : by.entrySet()) {
      List<Double> ms = e.getValue().stream().map(s -> s.ttft() / 1e6).toList();
      System.out.printf(
          Locale.ROOT,
          "| %s | %d | %d | %.0f | %.1f | %.1f–%.1f |%n",
          e.getKey(),
          ms.size(),
          e.getValue().get(0).promptTokens(),
          e.getValue().stream().mapToInt(Sample::cachedTokens).average().orElse(0),
          StreamedChats.quantile(ms, 0.5),
          Collections.min(ms),
          Collections.max(ms));
    }
    List<Double> ratios = new ArrayList<>();
    for (int i = 0; i < by.get("cold").size(); i++)
      ratios.add((double) by.get("warm").get(i).ttft() / by.get("cold").get(i).ttft());
    System.out.printf(
        Locale.ROOT,
        "warm / cold TTFT per pair: %s (median %.3f)%n",
        ratios.stream().map(r -> String.format(Locale.ROOT, "%.3f", r)).toList(),
        StreamedChats.quantile(ratios, 0.5));
  }

  /** RL rounds, the variants alternating; pooled figures and per-round ratios. */
  private static void rlPart(HttpClient http, String tokenizeUrl, List<Variant> variants, Options o)
      throws Exception {
    Map<String, List<Round>> rounds = new LinkedHashMap<>();
    for (Variant v : variants) rounds.put(v.name(), new ArrayList<>());
    System.out.println();
    for (int r = 0; r < o.rounds(); r++) {
      String system = StreamedChats.text(http, tokenizeUrl, o.systemTokens(), "training step " + r);
      for (int i = 0; i < variants.size(); i++) {
        Variant v = variants.get((i + r) % variants.size());
        Round round = rlRound(http, v, system, o);
        rounds.get(v.name()).add(round);
        Map<String, Integer> reasons = new HashMap<>();
        for (Sample s : round.samples())
          reasons.merge(StreamedChats.field(s.route(), "reason"), 1, Integer::sum);
        System.out.printf(
            Locale.ROOT,
            "round %d %-11s %.2f s, %.1f output tok/s, TTFT p50 %.0f ms p99 %.0f ms, cached %d of %d prompt tokens, routed %s, load %s%n",
            r,
            v.name(),
            round.seconds(),
            round.outputPerSecond(),
            round.ttftMs(0.5),
            round.ttftMs(0.99),
            round.cachedTokens(),
            round.promptTokens(),
            reasons,
            StreamedChats.uptime());
        Thread.sleep(300);
      }
    }
    String base = variants.get(variants.size() - 1).name();
    System.out.println();
    System.out.println(
        "| variant | requests | output tok/s | total tok/s | prompt tokens cached | TTFT p50 ms | TTFT p99 ms | output tok/s ÷ no cache (per round) | TTFT p50 ÷ no cache (per round) |");
    System.out.println("|---|---|---|---|---|---|---|---|---|");
    for (var e : rounds.entrySet()) {
      List<Round> rs = e.getValue();
      double seconds = rs.stream().mapToDouble(Round::seconds).sum();
      long out = rs.stream().mapToLong(Round::outputTokens).sum();
      long prompt = rs.stream().mapToLong(Round::promptTokens).sum();
      long cached = rs.stream().mapToLong(Round::cachedTokens).sum();
      List<Sample> all = rs.stream().flatMap(x -> x.samples().stream()).toList();
      Round pooled = new Round(e.getKey(), seconds, all);
      List<String> tputRatios = new ArrayList<>();
      List<String> ttftRatios = new ArrayList<>();
      for (int r = 0; r < rs.size(); r++) {
        Round b = rounds.get(base).get(r);
        tputRatios.add(
            String.format(Locale.ROOT, "%.2f", rs.get(r).outputPerSecond() / b.outputPerSecond()));
        ttftRatios.add(String.format(Locale.ROOT, "%.2f", rs.get(r).ttftMs(0.5) / b.ttftMs(0.5)));
      }
      System.out.printf(
          Locale.ROOT,
          "| %s | %d | %.1f | %.0f | %.1f%% | %.0f | %.0f | %s | %s |%n",
          e.getKey(),
          all.size(),
          out / seconds,
          (out + prompt) / seconds,
          100.0 * cached / prompt,
          pooled.ttftMs(0.5),
          pooled.ttftMs(0.99),
          String.join(", ", tputRatios),
          String.join(", ", ttftRatios));
    }
  }

  /**
   * Multi-turn agents, where routing matters: {@code --conversations} conversations at once, each
   * behind a system prompt of its own (~{@code --system-tokens}), {@code --turns} turns each (the
   * previous answers resent, as chat clients do). Variants alternate as in the RL part.
   */
  private static void agentPart(
      HttpClient http, String tokenizeUrl, List<Variant> variants, Options o) throws Exception {
    String base = StreamedChats.text(http, tokenizeUrl, o.systemTokens(), "agents");
    Map<String, List<Round>> rounds = new LinkedHashMap<>();
    for (Variant v : variants) rounds.put(v.name(), new ArrayList<>());
    System.out.println();
    for (int r = 0; r < o.rounds(); r++) {
      for (int i = 0; i < variants.size(); i++) {
        Variant v = variants.get((i + r) % variants.size());
        Round round = agentRound(http, v, base, "round " + r + " " + v.name(), o);
        rounds.get(v.name()).add(round);
        Map<String, Integer> reasons = new HashMap<>();
        for (Sample s : round.samples())
          reasons.merge(StreamedChats.field(s.route(), "reason"), 1, Integer::sum);
        System.out.printf(
            Locale.ROOT,
            "agents round %d %-11s %.2f s, %.1f output tok/s, later turns TTFT p50 %.0f ms p99 %.0f ms, cached %d of %d prompt tokens, routed %s, load %s%n",
            r,
            v.name(),
            round.seconds(),
            round.outputPerSecond(),
            round.ttftMs(0.5),
            round.ttftMs(0.99),
            round.cachedTokens(),
            round.promptTokens(),
            reasons,
            StreamedChats.uptime());
        Thread.sleep(300);
      }
    }
    String baseName = variants.get(variants.size() - 1).name();
    System.out.println();
    System.out.println(
        "| variant | turns after the first | output tok/s | prompt tokens cached | TTFT p50 ms | TTFT p99 ms | TTFT p50 ÷ no cache (per round) |");
    System.out.println("|---|---|---|---|---|---|---|");
    for (var e : rounds.entrySet()) {
      List<Round> rs = e.getValue();
      double seconds = rs.stream().mapToDouble(Round::seconds).sum();
      List<Sample> all = rs.stream().flatMap(x -> x.samples().stream()).toList();
      Round pooled = new Round(e.getKey(), seconds, all);
      List<String> ratios = new ArrayList<>();
      for (int r = 0; r < rs.size(); r++)
        ratios.add(
            String.format(
                Locale.ROOT,
                "%.2f",
                rs.get(r).ttftMs(0.5) / rounds.get(baseName).get(r).ttftMs(0.5)));
      System.out.printf(
          Locale.ROOT,
          "| %s | %d | %.1f | %.1f%% | %.0f | %.0f | %s |%n",
          e.getKey(),
          all.size(),
          pooled.outputPerSecond(),
          100.0 * pooled.cachedTokens() / pooled.promptTokens(),
          pooled.ttftMs(0.5),
          pooled.ttftMs(0.99),
          String.join(", ", ratios));
    }
  }

  /**
   * One round of conversations; the samples are the turns after the first (whose prefix some
   * replica has computed), the time is the whole round's.
   */
  private static Round agentRound(HttpClient http, Variant v, String base, String label, Options o)
      throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(o.conversations());
    try {
      List<Future<List<Sample>>> futures = new ArrayList<>();
      long start = System.nanoTime();
      for (int c = 0; c < o.conversations(); c++) {
        String system = "Conversation " + c + ", " + label + ". " + base;
        futures.add(
            pool.submit(
                () -> {
                  List<Map<String, String>> messages = new ArrayList<>();
                  messages.add(Map.of("role", "system", "content", system));
                  List<Sample> later = new ArrayList<>();
                  for (int t = 0; t < o.turns(); t++) {
                    messages.add(Map.of("role", "user", "content", "Turn " + t + ": go on."));
                    Sample s =
                        StreamedChats.chat(
                            http, v.url(), List.copyOf(messages), o.maxTokens(), 0.7);
                    messages.add(Map.of("role", "assistant", "content", s.content()));
                    if (t > 0) later.add(s);
                  }
                  return later;
                }));
      }
      List<Sample> samples = new ArrayList<>();
      for (Future<List<Sample>> f : futures) samples.addAll(f.get());
      return new Round(v.name(), (System.nanoTime() - start) / 1e9, samples);
    } finally {
      pool.shutdown();
    }
  }

  /** One step of rollouts: every group's requests in flight at once, as ART gathers them. */
  private static Round rlRound(HttpClient http, Variant v, String system, Options o)
      throws Exception {
    int total = o.prompts() * o.group();
    ExecutorService pool = Executors.newFixedThreadPool(total);
    try {
      List<Future<Sample>> futures = new ArrayList<>();
      long start = System.nanoTime();
      for (int p = 0; p < o.prompts(); p++) {
        String user = "Problem " + p + ": " + "solve the puzzle step by step. ".repeat(1 + p % 3);
        for (int g = 0; g < o.group(); g++)
          futures.add(
              pool.submit(
                  () -> StreamedChats.chat(http, v.url(), system, user, o.maxTokens(), 1.0)));
      }
      List<Sample> samples = new ArrayList<>();
      for (Future<Sample> f : futures) samples.add(f.get());
      return new Round(v.name(), (System.nanoTime() - start) / 1e9, samples);
    } finally {
      pool.shutdown();
    }
  }

  static Options parse(String[] args) {
    String model = null;
    int prefixTokens = 2000, pairs = 5, systemTokens = 1000, prompts = 16, group = 8;
    int maxTokens = 32, rounds = 3, conversations = 16, turns = 4;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--model" -> model = args[++i];
        case "--prefix-tokens" -> prefixTokens = Integer.parseInt(args[++i]);
        case "--pairs" -> pairs = Integer.parseInt(args[++i]);
        case "--system-tokens" -> systemTokens = Integer.parseInt(args[++i]);
        case "--prompts" -> prompts = Integer.parseInt(args[++i]);
        case "--group" -> group = Integer.parseInt(args[++i]);
        case "--max-tokens" -> maxTokens = Integer.parseInt(args[++i]);
        case "--rounds" -> rounds = Integer.parseInt(args[++i]);
        case "--conversations" -> conversations = Integer.parseInt(args[++i]);
        case "--turns" -> turns = Integer.parseInt(args[++i]);
        default -> throw new IllegalArgumentException("unknown argument " + args[i]);
      }
    }
    return new Options(
        model,
        prefixTokens,
        pairs,
        systemTokens,
        prompts,
        group,
        maxTokens,
        rounds,
        conversations,
        turns);
  }
}
