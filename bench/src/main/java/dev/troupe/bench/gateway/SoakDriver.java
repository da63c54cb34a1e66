package dev.troupe.bench.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;

/**
 * The soak test's load (run by {@code deploy/soak.sh} against a 3-node cluster whose worker nodes
 * it kills and restarts): {@code streams} closed-loop clients of streaming chat completions, {@code
 * whole} of non-streaming ones, and {@code writers} trajectory-log writers, for {@code seconds}.
 * Every chat request is one of 8 seeded variants (n = 1, or 2 for two of them) whose failure-free
 * token ids are taken first; a completed request must reproduce them exactly.
 *
 * <p>Each request ends as exactly one of: completed (token-identical or not), a clear error (an
 * OpenAI-shaped error event then {@code [DONE]}, or an error status with an OpenAI error body), a
 * hang (no byte for {@code hang-seconds}: the request is abandoned), or an unclear failure (a reset
 * connection, a malformed answer). Afterwards every acknowledged log write must be stored exactly
 * once. Prints the counts, and each error message seen with its count ({@code error_messages}), as
 * JSON (also to {@code --out}); exits 1 when a request hung, failed unclearly or differed from its
 * reference, or a log write was lost or duplicated.
 *
 * <p>Usage: {@code SoakDriver --url http://127.0.0.1:8000 --key K [--streams 64] [--whole 8]
 * [--writers 4] [--seconds 600] [--max-tokens 48] [--hang-seconds 150] [--out FILE] [--events
 * FILE]}; {@code --events} names the script's events file, whose kill lines give the per-kill
 * figures.
 */
public final class SoakDriver {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final int VARIANTS = 8;

  private final String url;
  private final String key;
  private final int maxTokens;
  private final Duration hang;
  private final HttpClient http =
      HttpClient.newBuilder()
          .version(HttpClient.Version.HTTP_1_1)
          .connectTimeout(Duration.ofSeconds(10))
          .build();
  private final Map<Integer, List<List<Integer>>> reference = new ConcurrentHashMap<>();
  private final Map<String, AtomicLong> counts = new ConcurrentHashMap<>();
  private final Map<String, Long> started = new ConcurrentHashMap<>(); // request -> last progress
  private final Map<String, Stream<String>> bodies = new ConcurrentHashMap<>();
  private final Set<String> hung = ConcurrentHashMap.newKeySet();
  private final Set<String> acked = ConcurrentHashMap.newKeySet();
  private final Queue<Outcome> outcomes = new ConcurrentLinkedQueue<>();
  // "<status or error_event>: <message>" -> how many, so a run tells its errors' causes apart
  private final Map<String, AtomicLong> errorMessages = new ConcurrentHashMap<>();
  private volatile boolean running = true;

  /**
   * One chat request: wall-clock start and end (epoch ms), how it ended, and its longest wait
   * between two bytes (the stall a migration costs the client; for a non-streaming request, the
   * whole wait).
   */
  private record Outcome(boolean stream, long startMs, long endMs, String kind, long maxGapMs) {
    boolean ok() {
      return kind.equals("completed_identical");
    }
  }

  private SoakDriver(String url, String key, int maxTokens, Duration hang) {
    this.url = url;
    this.key = key;
    this.maxTokens = maxTokens;
    this.hang = hang;
  }

  public static void main(String[] args) throws Exception {
    Map<String, String> o = new TreeMap<>();
    for (int i = 0; i + 1 < args.length; i += 2)
      o.put(args[i].replaceFirst("^--", ""), args[i + 1]);
    SoakDriver d =
        new SoakDriver(
            o.getOrDefault("url", "http://127.0.0.1:8000"),
            o.get("key"),
            Integer.parseInt(o.getOrDefault("max-tokens", "48")),
            Duration.ofSeconds(Long.parseLong(o.getOrDefault("hang-seconds", "150"))));
    Map<String, Object> result =
        d.run(
            Integer.parseInt(o.getOrDefault("streams", "64")),
            Integer.parseInt(o.getOrDefault("whole", "8")),
            Integer.parseInt(o.getOrDefault("writers", "4")),
            Long.parseLong(o.getOrDefault("seconds", "600")),
            o.containsKey("events") ? Path.of(o.get("events")) : null);
    String out = JSON.writerWithDefaultPrettyPrinter().writeValueAsString(result);
    System.out.println(out);
    if (o.containsKey("out")) Files.writeString(Path.of(o.get("out")), out);
    System.exit(Boolean.TRUE.equals(result.get("passed")) ? 0 : 1);
  }

  private Map<String, Object> run(int streams, int whole, int writers, long seconds, Path events)
      throws Exception {
    for (int v = 0; v < VARIANTS; v++) reference.put(v, referenceTokens(v));
    String model = createModel();
    ScheduledExecutorService watchdog = Executors.newSingleThreadScheduledExecutor();
    watchdog.scheduleWithFixedDelay(this::abandonHung, 5, 5, TimeUnit.SECONDS);
    List<Thread> threads = new ArrayList<>();
    for (int i = 0; i < streams; i++) threads.add(client("stream", i, true));
    for (int i = 0; i < whole; i++) threads.add(client("whole", i, false));
    for (int i = 0; i < writers; i++) threads.add(writer(model, i));
    long start = System.nanoTime();
    long startMs = System.currentTimeMillis();
    System.out.println("soak: load started"); // deploy/soak.sh times its kills from here
    System.out.flush();
    Thread.sleep(TimeUnit.SECONDS.toMillis(seconds));
    running = false; // no new requests; those in flight end (or count as hung)
    for (Thread t : threads) t.join();
    watchdog.shutdownNow();
    Map<String, Object> result = new LinkedHashMap<>();
    result.put("seconds", (System.nanoTime() - start) / 1_000_000_000L);
    result.put("streams", streams);
    result.put("non_streaming_clients", whole);
    result.put("log_writers", writers);
    Map<String, Long> c = new TreeMap<>();
    counts.forEach((k, v) -> c.put(k, v.get()));
    result.put("requests", c);
    Map<String, Long> messages = new TreeMap<>();
    errorMessages.forEach((k, v) -> messages.put(k, v.get()));
    result.put("error_messages", messages);
    List<Long> stalls = new ArrayList<>();
    for (Outcome o : outcomes) if (o.ok() && o.stream()) stalls.add(o.maxGapMs());
    stalls.sort(null);
    if (!stalls.isEmpty())
      result.put(
          "stream_longest_gap_between_lines_ms",
          Map.of(
              "p50", stalls.get(stalls.size() / 2),
              "p99", stalls.get((int) (stalls.size() * 0.99)),
              "max", stalls.get(stalls.size() - 1)));
    if (events != null) result.put("kills", aroundKills(events, startMs));
    result.put("log", verifyLog(model));
    boolean passed = true;
    for (var e : c.entrySet())
      if (e.getKey().endsWith(".hung")
          || e.getKey().endsWith(".unclear")
          || e.getKey().endsWith(".completed_different")) passed &= e.getValue() == 0;
    @SuppressWarnings("unchecked")
    Map<String, Object> log = (Map<String, Object>) result.get("log");
    passed &= (long) log.get("acknowledged_missing") == 0 && (long) log.get("stored_twice") == 0;
    result.put("passed", passed);
    return result;
  }

  // ------------------------------------------------------------------ chat

  private String body(int variant, boolean stream) {
    int n = variant % 4 == 3 ? 2 : 1;
    return """
    {"model":"demo","messages":[{"role":"user","content":"Soak prompt %d: tell a story"}],
     "stream":%s,"n":%d,"max_tokens":%d,"temperature":0.9,"seed":%d,"ignore_eos":true,
     "return_token_ids":true}\
    """
        .formatted(variant, stream, n, maxTokens, 1000 + variant);
  }

  private HttpRequest chat(int variant, boolean stream) {
    return request("/v1/chat/completions")
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body(variant, stream)))
        .build();
  }

  private HttpRequest.Builder request(String path) {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url + path));
    if (key != null) b.header("Authorization", "Bearer " + key);
    return b;
  }

  private List<List<Integer>> referenceTokens(int variant) throws Exception {
    HttpResponse<String> r = http.send(chat(variant, false), HttpResponse.BodyHandlers.ofString());
    if (r.statusCode() != 200)
      throw new IllegalStateException("reference run " + variant + ": " + r.body());
    List<List<Integer>> out = new ArrayList<>();
    for (JsonNode c : JSON.readTree(r.body()).path("choices")) {
      List<Integer> ids = new ArrayList<>();
      c.path("token_ids").forEach(t -> ids.add(t.asInt()));
      out.add(ids);
    }
    return out;
  }

  private Thread client(String kind, int no, boolean stream) {
    Thread t =
        new Thread(
            () -> {
              for (int i = 0; running; i++) {
                int variant = (no + i) % VARIANTS;
                String id = kind + no + "-" + i;
                long[] gap = {System.currentTimeMillis(), 0}; // last byte, longest gap
                long startMs = gap[0];
                String outcome;
                try {
                  outcome = stream ? streamOnce(id, variant, gap) : wholeOnce(variant);
                } catch (Exception e) {
                  outcome = hung.remove(id) ? "hung" : "unclear";
                  System.err.println(kind + " " + no + ": " + outcome + ": " + e);
                }
                long endMs = System.currentTimeMillis();
                long maxGap = stream ? Math.max(gap[1], endMs - gap[0]) : endMs - startMs;
                outcomes.add(new Outcome(stream, startMs, endMs, outcome, maxGap));
                count(kind + "." + outcome);
              }
            },
            kind + "-" + no);
    t.start();
    return t;
  }

  private String streamOnce(String id, int variant, long[] gap) throws Exception {
    started.put(id, System.nanoTime());
    try {
      HttpRequest req =
          HttpRequest.newBuilder(chat(variant, true), (n, v) -> true).timeout(hang).build();
      HttpResponse<Stream<String>> r;
      try {
        r = http.send(req, HttpResponse.BodyHandlers.ofLines());
      } catch (java.net.http.HttpTimeoutException e) {
        return "hung"; // no answer at all within the hang limit
      }
      bodies.put(id, r.body());
      if (r.statusCode() != 200) {
        String body = String.join("\n", (Iterable<String>) r.body()::iterator);
        return errorOutcome(r.statusCode(), body);
      }
      List<List<Integer>> ids = new ArrayList<>();
      for (int i = 0; i < reference.get(variant).size(); i++) ids.add(new ArrayList<>());
      String error = null;
      boolean done = false;
      for (String line : (Iterable<String>) r.body()::iterator) {
        started.put(id, System.nanoTime());
        long now = System.currentTimeMillis();
        gap[1] = Math.max(gap[1], now - gap[0]);
        gap[0] = now;
        if (!line.startsWith("data: ")) continue;
        String data = line.substring(6);
        if (data.equals("[DONE]")) {
          done = true;
          break;
        }
        JsonNode chunk = JSON.readTree(data);
        if (chunk.has("error")) {
          error = chunk.path("error").path("type").asText("?");
          String message = chunk.path("error").path("message").asText("");
          System.err.println(id + ": error event: " + message);
          errorMessages
              .computeIfAbsent("error_event: " + message, k -> new AtomicLong())
              .incrementAndGet();
          continue;
        }
        for (JsonNode c : chunk.path("choices"))
          c.path("token_ids").forEach(t -> ids.get(c.path("index").asInt()).add(t.asInt()));
      }
      if (!done) return hung.remove(id) ? "hung" : "unclear";
      if (error != null) return "error_event." + error;
      return ids.equals(reference.get(variant)) ? "completed_identical" : different(id, ids);
    } finally {
      started.remove(id);
      bodies.remove(id);
    }
  }

  private String wholeOnce(int variant) throws Exception {
    HttpRequest req =
        HttpRequest.newBuilder(chat(variant, false), (n, v) -> true).timeout(hang).build();
    HttpResponse<String> r;
    try {
      r = http.send(req, HttpResponse.BodyHandlers.ofString());
    } catch (java.net.http.HttpTimeoutException e) {
      return "hung";
    }
    if (r.statusCode() != 200) return errorOutcome(r.statusCode(), r.body());
    List<List<Integer>> ids = new ArrayList<>();
    for (JsonNode c : JSON.readTree(r.body()).path("choices")) {
      List<Integer> one = new ArrayList<>();
      c.path("token_ids").forEach(t -> one.add(t.asInt()));
      ids.add(one);
    }
    return ids.equals(reference.get(variant)) ? "completed_identical" : different("whole", ids);
  }

  private static String different(String id, List<List<Integer>> ids) {
    System.err.println(id + ": completed with different tokens: " + ids);
    return "completed_different";
  }

  /** An error status: clear when its body is an OpenAI error object. */
  private String errorOutcome(int status, String body) {
    try {
      JsonNode e = JSON.readTree(body).path("error");
      if (e.hasNonNull("message") && e.hasNonNull("type")) {
        errorMessages
            .computeIfAbsent(status + ": " + e.path("message").asText(), k -> new AtomicLong())
            .incrementAndGet();
        return "error_status." + status + "." + e.path("type").asText();
      }
    } catch (IOException notJson) {
      // unclear below
    }
    System.err.println("unclear error " + status + ": " + body);
    return "unclear";
  }

  /** Streams without a byte for the hang limit are abandoned (their body is closed). */
  private void abandonHung() {
    long now = System.nanoTime();
    for (var e : started.entrySet())
      if (now - e.getValue() > hang.toNanos() && hung.add(e.getKey())) {
        System.err.println("request " + e.getKey() + " hung");
        Stream<String> body = bodies.remove(e.getKey());
        if (body != null) body.close(); // unblocks its reader
      }
  }

  private void count(String outcome) {
    counts.computeIfAbsent(outcome, k -> new AtomicLong()).incrementAndGet();
  }

  // ------------------------------------------------------------------ trajectory log

  private String createModel() throws Exception {
    HttpResponse<String> r =
        http.send(
            request("/v1/preview/models")
                .header("Content-Type", "application/json")
                .POST(
                    HttpRequest.BodyPublishers.ofString(
                        "{\"project\":\"soak\",\"name\":\"soak-"
                            + System.currentTimeMillis()
                            + "\",\"base_model\":\"demo\"}"))
                .build(),
            HttpResponse.BodyHandlers.ofString());
    if (r.statusCode() != 200) throw new IllegalStateException("create model: " + r.body());
    return JSON.readTree(r.body()).path("id").asText();
  }

  /**
   * A closed-loop log writer. Each write has its own Idempotency-Key and is retried with it (up to
   * 5 tries, 1 s apart) when unanswered or answered 5xx, as a careful client would: a write counts
   * as acknowledged on its first 200, and must then be stored exactly once.
   */
  private Thread writer(String model, int no) {
    Thread t =
        new Thread(
            () -> {
              for (int i = 0; running; i++) {
                String marker = "w" + no + "-" + i;
                String body =
                    "{\"split\":\"train\",\"trajectory_groups\":[{\"trajectories\":[{"
                        + "\"messages_and_choices\":[{\"role\":\"user\",\"content\":\"q\"}],"
                        + "\"reward\":1,\"metadata\":{\"marker\":\""
                        + marker
                        + "\"}}]}]}";
                String outcome = "unanswered";
                for (int attempt = 1; attempt <= 5; attempt++) {
                  if (attempt > 1) sleep(1000);
                  try {
                    HttpResponse<String> r =
                        http.send(
                            request("/v1/preview/models/" + model + "/log")
                                .header("Content-Type", "application/json")
                                .header("Idempotency-Key", marker)
                                .timeout(Duration.ofSeconds(180))
                                .POST(HttpRequest.BodyPublishers.ofString(body))
                                .build(),
                            HttpResponse.BodyHandlers.ofString());
                    if (r.statusCode() == 200) {
                      acked.add(marker);
                      outcome = attempt == 1 ? "acknowledged" : "acknowledged_on_retry";
                      if (JSON.readTree(r.body()).path("duplicate").asBoolean())
                        count("log.duplicate_replies");
                      break;
                    }
                    outcome = "refused." + r.statusCode();
                    if (r.statusCode() < 500) break;
                  } catch (Exception e) {
                    outcome = "unanswered";
                    System.err.println("log " + marker + " attempt " + attempt + ": " + e);
                  }
                }
                count("log." + outcome);
              }
            },
            "writer-" + no);
    t.start();
    return t;
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  // ------------------------------------------------------------------ around each kill

  /**
   * Per kill (lines {@code <epoch ms> kill -9 ...} of the script's events file): the requests in
   * flight at that moment and how they ended, their longest stall, and the requests started in the
   * following window (until the next kill) that failed, with the end of the last one.
   */
  private List<Map<String, Object>> aroundKills(Path events, long soakStartMs) throws IOException {
    List<Long> kills = new ArrayList<>();
    for (String line : Files.readAllLines(events))
      if (line.contains(" kill -9 "))
        kills.add(Long.parseLong(line.substring(0, line.indexOf(' '))));
    List<Map<String, Object>> out = new ArrayList<>();
    for (int k = 0; k < kills.size(); k++) {
      long at = kills.get(k);
      long until = k + 1 < kills.size() ? kills.get(k + 1) : Long.MAX_VALUE;
      Map<String, Long> inFlight = new TreeMap<>();
      long maxStall = 0;
      long failedAfter = 0;
      long lastFailureEnd = -1;
      for (Outcome o : outcomes) {
        if (o.startMs() < at && o.endMs() > at) {
          inFlight.merge(o.kind(), 1L, Long::sum);
          if (o.ok() && o.stream()) maxStall = Math.max(maxStall, o.maxGapMs());
        } else if (o.startMs() >= at && o.startMs() < until && !o.ok()) {
          failedAfter++;
          lastFailureEnd = Math.max(lastFailureEnd, o.endMs() - at);
        }
      }
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("kill_at_s", (at - soakStartMs) / 1000.0);
      m.put("in_flight", inFlight);
      m.put("in_flight_streams_longest_gap_ms", maxStall);
      m.put("started_after_and_failed", failedAfter);
      m.put("last_failure_ended_after_kill_ms", lastFailureEnd);
      out.add(m);
    }
    return out;
  }

  /** Every stored group's marker, read through the cursor pages. */
  private Map<String, Object> verifyLog(String model) throws Exception {
    Map<String, Integer> stored = new ConcurrentHashMap<>();
    String after = null;
    while (true) {
      String q = "?limit=100" + (after == null ? "" : "&after=" + after);
      HttpResponse<String> r =
          http.send(
              request("/v1/preview/models/" + model + "/trajectories" + q).GET().build(),
              HttpResponse.BodyHandlers.ofString());
      if (r.statusCode() != 200) throw new IllegalStateException("read log: " + r.body());
      JsonNode page = JSON.readTree(r.body());
      for (JsonNode g : page.path("data"))
        stored.merge(
            g.path("trajectories").get(0).path("metadata").path("marker").asText(),
            1,
            Integer::sum);
      if (!page.path("has_more").asBoolean()) break;
      after = page.path("last_id").asText();
    }
    long missing = acked.stream().filter(m -> !stored.containsKey(m)).count();
    long twice = stored.values().stream().filter(n -> n > 1).count();
    Map<String, Object> log = new LinkedHashMap<>();
    log.put("acknowledged", (long) acked.size());
    log.put("stored", (long) stored.size());
    log.put("acknowledged_missing", missing);
    log.put("stored_twice", twice);
    return log;
  }
}
