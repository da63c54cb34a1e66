package dev.troupe.bench.llamacpp;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.ServerSocket;
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
import java.util.Map;

/**
 * {@code troupe serve} as a user runs it: the distribution jar in its own JVM with the launcher's
 * flags, one model, CPU runner, talked to over HTTP (OpenAI chat completions).
 */
public final class TroupeServer implements AutoCloseable {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String KEY = "sk-bench";

  private final Process process;
  private final int port;
  private final HttpClient http =
      HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

  private TroupeServer(Process process, int port) {
    this.process = process;
    this.port = port;
  }

  /**
   * Starts {@code jar} serving {@code modelDir} as {@code bench}; {@code jvm} are extra JVM options
   * (heap, engine settings). Returns once a one-token completion succeeded.
   */
  static TroupeServer start(Path jar, Path modelDir, Path data, List<String> jvm, Path log)
      throws Exception {
    return start(jar, modelDir, data, jvm, Map.of(), List.of(), log);
  }

  /**
   * As {@link #start(Path, Path, Path, List, Path)}, with {@code env} added to the launcher's
   * environment and {@code flags} to {@code troupe serve}'s (e.g. {@code --quantization q8_0});
   * {@code jvm} comes after the launcher's JVM options, so it can override them.
   */
  public static TroupeServer start(
      Path jar,
      Path modelDir,
      Path data,
      List<String> jvm,
      Map<String, String> env,
      List<String> flags,
      Path log)
      throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    List<String> cmd = new ArrayList<>();
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    cmd.add(java);
    if (knowsTrimNativeHeap(java)) cmd.add("-XX:TrimNativeHeapInterval=5000"); // as the launcher
    cmd.addAll(
        List.of(
            "-XX:+UseG1GC", // as the ./troupe launcher
            "-XX:MinHeapFreeRatio=5",
            "-XX:MaxHeapFreeRatio=15",
            "-XX:G1PeriodicGCInterval=10000",
            "-XX:PerMethodTrapLimit=1000")); // the kernels' compiles, as the launcher
    cmd.addAll(jvm);
    cmd.addAll(
        List.of(
            "--add-modules",
            "jdk.incubator.vector",
            "--add-opens",
            "java.base/java.nio=ALL-UNNAMED",
            "--add-opens",
            "java.base/java.lang=ALL-UNNAMED",
            "--add-opens",
            "java.base/sun.nio.ch=ALL-UNNAMED",
            "-jar",
            jar.toString(),
            "serve",
            "--model",
            "bench=" + modelDir,
            "--port",
            Integer.toString(port),
            "--cluster-port",
            "0",
            "--management-port",
            "-1",
            "--api-key",
            KEY,
            "--device",
            "cpu",
            "--data-dir",
            data.toString()));
    cmd.addAll(flags);
    ProcessBuilder pb =
        new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile());
    pb.environment().put("GOMP_SPINCOUNT", "1000"); // as the ./troupe launcher
    pb.environment().putAll(env);
    TroupeServer t = new TroupeServer(pb.start(), port);
    long deadline = System.nanoTime() + Duration.ofMinutes(10).toNanos();
    while (true) {
      if (!t.process.isAlive())
        throw new IllegalStateException("troupe exited; see " + log + "\n" + Files.readString(log));
      try {
        t.chat("hello", 1, false);
        return t;
      } catch (IOException | RuntimeException e) {
        if (System.nanoTime() > deadline) throw e;
        Thread.sleep(500);
      }
    }
  }

  /**
   * Whether {@code java} accepts {@code -XX:TrimNativeHeapInterval} (JDK 17.0.9+), as the launcher
   * asks.
   */
  private static boolean knowsTrimNativeHeap(String java) throws IOException, InterruptedException {
    Process p =
        new ProcessBuilder(java, "-XX:TrimNativeHeapInterval=5000", "-version")
            .redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.DISCARD)
            .start();
    return p.waitFor() == 0;
  }

  public long pid() {
    return process.pid();
  }

  /** The server process's resident set, bytes. */
  public long rssBytes() throws IOException {
    for (String line : Files.readAllLines(Path.of("/proc/" + process.pid() + "/status")))
      if (line.startsWith("VmRSS:")) return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
    return -1;
  }

  /** Prompt tokens of a chat request whose only message is {@code text}. */
  public int promptTokens(String text) throws Exception {
    ObjectNode body = JSON.createObjectNode().put("model", "bench");
    body.putArray("messages").addObject().put("role", "user").put("content", text);
    return post("/tokenize", body).get("count").asInt();
  }

  /**
   * A greedy chat completion of {@code maxTokens} tokens past EOS; streamed (read to the end) or
   * not. Returns the completion tokens. Each request has a fresh {@code cache_salt}, so none reuses
   * another's cached prefix (the BOS block would be shared otherwise).
   */
  public int chat(String text, int maxTokens, boolean stream) throws Exception {
    ObjectNode body =
        JSON.createObjectNode()
            .put("model", "bench")
            .put("cache_salt", java.util.UUID.randomUUID().toString())
            .put("max_tokens", maxTokens)
            .put("temperature", 0)
            .put("ignore_eos", true)
            .put("stream", stream);
    body.putArray("messages").addObject().put("role", "user").put("content", text);
    if (!stream)
      return post("/v1/chat/completions", body).path("usage").path("completion_tokens").asInt();
    body.putObject("stream_options").put("include_usage", true);
    HttpResponse<java.io.InputStream> r =
        http.send(request("/v1/chat/completions", body), HttpResponse.BodyHandlers.ofInputStream());
    if (r.statusCode() != 200) throw new IOException("HTTP " + r.statusCode());
    int tokens = 0;
    try (BufferedReader in =
        new BufferedReader(new InputStreamReader(r.body(), StandardCharsets.UTF_8))) {
      for (String line; (line = in.readLine()) != null; ) {
        if (!line.startsWith("data: {")) continue;
        JsonNode u = JSON.readTree(line.substring(6)).path("usage");
        if (u.has("completion_tokens")) tokens = u.get("completion_tokens").asInt();
      }
    }
    return tokens;
  }

  /**
   * Seconds from the first to the last streamed chunk of a greedy chat completion of {@code
   * maxTokens} tokens past EOS (one chunk per engine step at batch 1; {@link StreamedDecode}).
   */
  public double streamedDecodeSeconds(String text, int maxTokens) throws Exception {
    ObjectNode body =
        JSON.createObjectNode()
            .put("model", "bench")
            .put("cache_salt", java.util.UUID.randomUUID().toString())
            .put("max_tokens", maxTokens)
            .put("temperature", 0)
            .put("ignore_eos", true)
            .put("stream", true);
    body.putArray("messages").addObject().put("role", "user").put("content", text);
    HttpResponse<java.io.InputStream> r =
        http.send(request("/v1/chat/completions", body), HttpResponse.BodyHandlers.ofInputStream());
    if (r.statusCode() != 200) throw new IOException("HTTP " + r.statusCode());
    StreamedDecode d = StreamedDecode.read(r.body(), json -> !json.contains("\"choices\":[]"));
    if (!JSON.readTree(d.last())
        .path("choices")
        .path(0)
        .path("finish_reason")
        .asText()
        .equals("length"))
      throw new IOException("the stream did not end at max_tokens: " + d.last());
    return d.seconds();
  }

  private JsonNode post(String path, JsonNode body) throws Exception {
    HttpResponse<String> r = http.send(request(path, body), HttpResponse.BodyHandlers.ofString());
    if (r.statusCode() != 200) throw new IOException("HTTP " + r.statusCode() + ": " + r.body());
    return JSON.readTree(r.body());
  }

  private HttpRequest request(String path, JsonNode body) throws IOException {
    return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
        .header("Authorization", "Bearer " + KEY)
        .header("Content-Type", "application/json")
        .timeout(Duration.ofMinutes(10))
        .POST(HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(body)))
        .build();
  }

  @Override
  public void close() throws Exception {
    process.destroy();
    if (!process.waitFor(30, java.util.concurrent.TimeUnit.SECONDS)) process.destroyForcibly();
  }
}
