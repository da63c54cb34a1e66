package dev.troupe.bench.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Disaggregated prefill/decode against a running cluster (issue 28): {@code --streams} streams
 * decode without pause (closed loop, short prompts, {@code ignore_eos}) while long prompts arrive
 * one every {@code --interval-ms} (open loop, {@code --long-min}..{@code --long-max} tokens, sent
 * as token ids to {@code /v1/completions}, so their length is exact). Reports, for the streams, the
 * inter-token gap p50/p99 while long prompts arrive (what disaggregation is meant to protect) and
 * their TTFT; for the long prompts, TTFT p50/p99; output tokens/s of everything; how many long
 * prompts the gateway split ({@code X-Troupe-Route}); from the gateway's {@code /metrics}, the
 * prefill legs' mean latency and the KV channel's transfer rate: KV bytes the decode replicas
 * pulled over the seconds their pulls took ({@code
 * troupe:kv_transfer_bytes_total{direction="pulled"}} over {@code
 * troupe:kv_transfer_pull_seconds_sum}, scraped before and after).
 *
 * <p>Run it once against the cluster with every replica {@code both} and once with {@code
 * --kv-role} prefill/decode on the same nodes: {@code bench/pd-bench.sh} does both. Not a test:
 * results go to docs/benchmarks.md.
 *
 * <p>Usage: {@code PdBench --url http://127.0.0.1:8000 --key KEY [--model demo] [--label L]
 * [--streams 16] [--stream-tokens 128] [--long 8] [--long-min 2048] [--long-max 3500]
 * [--interval-ms 2000] [--long-tokens 16]}
 */
public final class PdBench {
  private static final ObjectMapper JSON = new ObjectMapper();

  record Options(
      String url,
      String key,
      String model,
      String label,
      int streams,
      int streamTokens,
      int longCount,
      int longMin,
      int longMax,
      long intervalMs,
      int longTokens) {}

  /** KV bytes pulled (the counter's series of direction pulled, summed over replicas). */
  static final String PULLED = "troupe:kv_transfer_bytes_total{direction=\"pulled\"}";

  /** Seconds the completed pulls took, summed. */
  static final String PULL_SECONDS = "troupe:kv_transfer_pull_seconds_sum";

  /** One request's timings: nanoseconds of its start, first token and each token-bearing event. */
  record Timing(long start, long first, List<Long> events, int tokens, String route) {}

  public static void main(String[] args) throws Exception {
    Options o = parse(args);
    HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    Map<String, Double> before = scrape(http, o);
    AtomicBoolean longPhase = new AtomicBoolean(true);
    ExecutorService pool = Executors.newFixedThreadPool(o.streams() + o.longCount() + 1);
    List<Timing> streamTimings = Collections.synchronizedList(new ArrayList<>());
    List<Future<?>> streams = new ArrayList<>();
    long t0 = System.nanoTime();
    for (int s = 0; s < o.streams(); s++) {
      int client = s;
      streams.add(
          pool.submit(
              () -> {
                int i = 0;
                while (longPhase.get()) {
                  streamTimings.add(
                      complete(http, o, shortPrompt(client, i++), o.streamTokens(), true));
                }
                return null;
              }));
    }
    Thread.sleep(2_000); // the streams are decoding before the first long prompt
    long longStart = System.nanoTime();
    List<Future<Timing>> longs = new ArrayList<>();
    Random random = new Random(28);
    for (int i = 0; i < o.longCount(); i++) {
      int length = o.longMin() + random.nextInt(o.longMax() - o.longMin() + 1);
      int k = i;
      longs.add(pool.submit(() -> complete(http, o, longPrompt(k, length), o.longTokens(), true)));
      Thread.sleep(o.intervalMs());
    }
    List<Timing> longTimings = new ArrayList<>();
    for (Future<Timing> f : longs) longTimings.add(f.get());
    long longEnd = System.nanoTime();
    longPhase.set(false);
    for (Future<?> f : streams) f.get();
    long t1 = System.nanoTime();
    pool.shutdown();
    pool.awaitTermination(1, TimeUnit.MINUTES);
    Map<String, Double> after = scrape(http, o);
    report(o, streamTimings, longTimings, longStart, longEnd, t1 - t0, before, after);
  }

  private static void report(
      Options o,
      List<Timing> streams,
      List<Timing> longs,
      long longStart,
      long longEnd,
      long totalNanos,
      Map<String, Double> before,
      Map<String, Double> after) {
    // Inter-token gaps of the streams, counted while long prompts were arriving or prefilling.
    List<Double> gaps = new ArrayList<>();
    List<Double> streamTtft = new ArrayList<>();
    long tokens = 0;
    for (Timing t : streams) {
      tokens += t.tokens();
      streamTtft.add((t.first() - t.start()) / 1e6);
      for (int i = 1; i < t.events().size(); i++) {
        long at = t.events().get(i);
        if (at >= longStart && at <= longEnd) gaps.add((at - t.events().get(i - 1)) / 1e6);
      }
    }
    List<Double> longTtft = new ArrayList<>();
    int split = 0;
    for (Timing t : longs) {
      tokens += t.tokens();
      longTtft.add((t.first() - t.start()) / 1e6);
      if (t.route() != null && t.route().contains("prefilled_by=")) split++;
    }
    double legCount = delta(before, after, "troupe:prefill_leg_seconds_count");
    double legSum = delta(before, after, "troupe:prefill_leg_seconds_sum");
    double bytes = delta(before, after, PULLED);
    double pullSeconds = delta(before, after, PULL_SECONDS);
    System.out.println(HEADER);
    System.out.println("|---|---|---|---|---|---|---|---|---|---|");
    System.out.printf(
        Locale.ROOT,
        "| %s | %d | %d | %.0f / %.0f | %.1f / %.1f | %.0f / %.0f | %.1f | %d/%d | %s | %s |%n",
        o.label(),
        o.streams(),
        o.longCount(),
        pct(longTtft, 50),
        pct(longTtft, 99),
        pct(gaps, 50),
        pct(gaps, 99),
        pct(streamTtft, 50),
        pct(streamTtft, 99),
        tokens / (totalNanos / 1e9),
        split,
        longs.size(),
        legCount > 0 ? String.format(Locale.ROOT, "%.0f", legSum / legCount * 1e3) : "-",
        Double.isNaN(bytes) || Double.isNaN(pullSeconds)
            ? "n/a"
            : pullSeconds > 0
                ? String.format(Locale.ROOT, "%.1f", bytes / 1e6 / pullSeconds)
                : "-");
  }

  /** The table's header, for docs/benchmarks.md. */
  static final String HEADER =
      "| run | streams | long prompts | long TTFT p50 / p99 ms | stream ITL p50 / p99 ms |"
          + " stream TTFT p50 / p99 ms | tok/s | split | prefill leg mean ms | KV MB/s |";

  private static double pct(List<Double> values, int p) {
    if (values.isEmpty()) return Double.NaN;
    List<Double> sorted = new ArrayList<>(values);
    Collections.sort(sorted);
    int i = (int) Math.ceil(p / 100.0 * sorted.size()) - 1;
    return sorted.get(Math.max(0, Math.min(sorted.size() - 1, i)));
  }

  private static double delta(Map<String, Double> before, Map<String, Double> after, String name) {
    if (!after.containsKey(name)) return Double.NaN;
    return after.get(name) - before.getOrDefault(name, 0.0);
  }

  /** A short prompt per stream and turn (distinct, so no stream rides on another's cache). */
  private static List<Integer> shortPrompt(int client, int turn) {
    List<Integer> ids = new ArrayList<>();
    for (int i = 0; i < 16; i++) ids.add(1000 + (client * 7919 + turn * 104729 + i * 31) % 50_000);
    return ids;
  }

  /** A long prompt of {@code length} ids, distinct per {@code k} from its first token. */
  private static List<Integer> longPrompt(int k, int length) {
    Random r = new Random(k);
    List<Integer> ids = new ArrayList<>(length);
    for (int i = 0; i < length; i++) ids.add(1000 + r.nextInt(50_000));
    return ids;
  }

  /** One streamed completion of {@code prompt}, timed per token-bearing event. */
  private static Timing complete(
      HttpClient http, Options o, List<Integer> prompt, int maxTokens, boolean ignoreEos)
      throws Exception {
    Map<String, Object> body = new HashMap<>();
    body.put("model", o.model());
    body.put("prompt", prompt);
    body.put("max_tokens", maxTokens);
    body.put("temperature", 0);
    body.put("ignore_eos", ignoreEos);
    body.put("stream", true);
    body.put("return_token_ids", true);
    HttpRequest request =
        HttpRequest.newBuilder(URI.create(o.url() + "/v1/completions"))
            .header("Content-Type", "application/json")
            .header("Authorization", "Bearer " + o.key())
            .timeout(Duration.ofMinutes(10))
            .POST(HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(body)))
            .build();
    long start = System.nanoTime();
    HttpResponse<InputStream> r = http.send(request, HttpResponse.BodyHandlers.ofInputStream());
    if (r.statusCode() != 200)
      throw new IllegalStateException(
          "HTTP "
              + r.statusCode()
              + ": "
              + new String(r.body().readAllBytes(), StandardCharsets.UTF_8));
    List<Long> events = new ArrayList<>();
    int tokens = 0;
    try (BufferedReader in =
        new BufferedReader(new InputStreamReader(r.body(), StandardCharsets.UTF_8))) {
      String line;
      while ((line = in.readLine()) != null) {
        if (!line.startsWith("data: ") || line.equals("data: [DONE]")) continue;
        JsonNode chunk = JSON.readTree(line.substring(6));
        if (chunk.has("error")) throw new IllegalStateException(line);
        int n = chunk.path("choices").path(0).path("token_ids").size();
        if (n > 0) {
          events.add(System.nanoTime()); // one event per engine step with news
          tokens += n;
        }
      }
    }
    long first = events.isEmpty() ? System.nanoTime() : events.get(0);
    return new Timing(
        start, first, events, tokens, r.headers().firstValue("X-Troupe-Route").orElse(null));
  }

  /**
   * Counter and histogram totals of the gateway's /metrics, summed over their labels; a series with
   * a {@code direction} label is also summed under {@code name{direction="..."}}.
   */
  private static Map<String, Double> scrape(HttpClient http, Options o) throws Exception {
    HttpResponse<String> r =
        http.send(
            HttpRequest.newBuilder(URI.create(o.url() + "/metrics"))
                .header("Authorization", "Bearer " + o.key())
                .timeout(Duration.ofSeconds(30))
                .build(),
            HttpResponse.BodyHandlers.ofString());
    Map<String, Double> totals = new HashMap<>();
    for (String line : r.body().split("\n")) {
      if (line.startsWith("#") || line.isBlank()) continue;
      int brace = line.indexOf('{');
      int space = line.lastIndexOf(' ');
      String name = brace > 0 ? line.substring(0, brace) : line.substring(0, space);
      try {
        double value = Double.parseDouble(line.substring(space + 1));
        totals.merge(name, value, Double::sum);
        Matcher direction = DIRECTION.matcher(line);
        if (brace > 0 && direction.find())
          totals.merge(name + "{direction=\"" + direction.group(1) + "\"}", value, Double::sum);
      } catch (NumberFormatException e) {
        // a value Prometheus writes that is not a number (NaN, +Inf): not one of ours
      }
    }
    return totals;
  }

  private static final Pattern DIRECTION = Pattern.compile("[{,]direction=\"([^\"]*)\"");

  private static Options parse(String[] args) {
    Map<String, String> a = new HashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) {
      if (!args[i].startsWith("--"))
        throw new IllegalArgumentException("expected a flag: " + args[i]);
      a.put(args[i].substring(2), args[i + 1]);
    }
    if (!a.containsKey("url") || !a.containsKey("key"))
      throw new IllegalArgumentException("usage: PdBench --url URL --key KEY [options]");
    Options o =
        new Options(
            a.get("url").replaceAll("/+$", ""),
            a.get("key"),
            a.getOrDefault("model", "demo"),
            a.getOrDefault("label", "run"),
            Integer.parseInt(a.getOrDefault("streams", "16")),
            Integer.parseInt(a.getOrDefault("stream-tokens", "128")),
            Integer.parseInt(a.getOrDefault("long", "8")),
            Integer.parseInt(a.getOrDefault("long-min", "2048")),
            Integer.parseInt(a.getOrDefault("long-max", "3500")),
            Long.parseLong(a.getOrDefault("interval-ms", "2000")),
            Integer.parseInt(a.getOrDefault("long-tokens", "16")));
    if (o.longMin() < 1 || o.longMax() < o.longMin())
      throw new IllegalArgumentException("--long-min must be >= 1 and <= --long-max");
    return o;
  }
}
