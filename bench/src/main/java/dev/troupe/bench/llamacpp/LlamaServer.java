package dev.troupe.bench.llamacpp;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Native {@code llama-server} (built by {@code bench/llamacpp/build-llama-server.sh}) serving one
 * GGUF, as a user on this machine runs it: its own process, {@code threads} threads, {@code slots}
 * slots, prompt cache off; called over HTTP ({@code /completion}).
 */
final class LlamaServer implements AutoCloseable {
  private static final ObjectMapper JSON = new ObjectMapper();

  private final Process process;
  private final int port;
  private final HttpClient http =
      HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

  private LlamaServer(Process process, int port) {
    this.process = process;
    this.port = port;
  }

  /**
   * Whether {@code gguf} is an 8-bit model on a CPU with AMX: there ggml's AMX Q8_0 kernel (an
   * "extra buffer type" of the repacked weights) dies at its first {@code tilezero} with SIGILL
   * (llama.cpp from node-llama-cpp 3.22.1, Emerald Rapids, 2026-11-28), so the server runs without
   * repacking, on ggml's AVX512-VNNI Q8_0 kernels.
   */
  private static boolean amxQ8Trap(Path gguf) throws IOException {
    if (!gguf.getFileName().toString().contains("q8_0")) return false;
    Path cpuinfo = Path.of("/proc/cpuinfo");
    return Files.isReadable(cpuinfo) && Files.readString(cpuinfo).contains(" amx_int8");
  }

  /** Starts {@code bin/llama-server} on {@code gguf}; returns once a completion succeeded. */
  static LlamaServer start(Path bin, Path gguf, int threads, int slots, int ctxPerSlot, Path log)
      throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    List<String> cmd =
        new ArrayList<>(
            List.of(
                bin.resolve("llama-server").toString(),
                "-m",
                gguf.toString(),
                "--host",
                "127.0.0.1",
                "--port",
                Integer.toString(port),
                "-t",
                Integer.toString(threads),
                "-tb",
                Integer.toString(threads),
                "-np",
                Integer.toString(slots),
                "-c",
                Integer.toString(slots * ctxPerSlot),
                "--no-cache-prompt",
                "--no-webui"));
    if (amxQ8Trap(gguf)) cmd.add("--no-repack");
    ProcessBuilder pb =
        new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile());
    LlamaServer l = new LlamaServer(pb.start(), port);
    long deadline = System.nanoTime() + Duration.ofMinutes(5).toNanos();
    while (true) {
      if (!l.process.isAlive())
        throw new IllegalStateException(
            "llama-server exited; see " + log + "\n" + Files.readString(log));
      try {
        l.complete("hello", 1);
        return l;
      } catch (IOException | RuntimeException e) {
        if (System.nanoTime() > deadline) throw e;
        Thread.sleep(500);
      }
    }
  }

  /** Prompt tokens of {@code text} as a completion prompt (BOS added). */
  int promptTokens(String text) throws Exception {
    ObjectNode body = JSON.createObjectNode().put("content", text).put("add_special", true);
    return JSON.readTree(post("/tokenize", body)).path("tokens").size();
  }

  /** A greedy completion of {@code n} tokens past EOS, prompt cache off; returns n. */
  int complete(String text, int n) throws Exception {
    ObjectNode body =
        JSON.createObjectNode()
            .put("prompt", text)
            .put("n_predict", n)
            .put("temperature", 0)
            .put("ignore_eos", true)
            .put("cache_prompt", false);
    int got = JSON.readTree(post("/completion", body)).path("tokens_predicted").asInt();
    if (got != n) throw new IOException("llama-server predicted " + got + " tokens, not " + n);
    return n;
  }

  /**
   * Seconds from the first to the last streamed event of a greedy completion of {@code n} tokens
   * past EOS, prompt cache off (one event per token; {@link StreamedDecode}).
   */
  double streamedDecodeSeconds(String text, int n) throws Exception {
    ObjectNode body =
        JSON.createObjectNode()
            .put("prompt", text)
            .put("n_predict", n)
            .put("temperature", 0)
            .put("ignore_eos", true)
            .put("cache_prompt", false)
            .put("stream", true);
    HttpRequest r =
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/completion"))
            .header("Content-Type", "application/json")
            .timeout(Duration.ofMinutes(10))
            .POST(HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(body)))
            .build();
    HttpResponse<java.io.InputStream> resp = send(r, HttpResponse.BodyHandlers.ofInputStream());
    if (resp.statusCode() != 200) throw new IOException("HTTP " + resp.statusCode());
    StreamedDecode d = StreamedDecode.read(resp.body(), json -> true);
    int got = JSON.readTree(d.last()).path("tokens_predicted").asInt();
    if (got != n) throw new IOException("llama-server predicted " + got + " tokens, not " + n);
    return d.seconds();
  }

  /**
   * {@code http.send}, once more when the connection was closed before any response byte came (as
   * {@link #post} does: llama-server may close a kept-alive connection just as the client reuses
   * it; seen in the warm-up's run of streamed requests).
   */
  private <T> HttpResponse<T> send(HttpRequest r, HttpResponse.BodyHandler<T> handler)
      throws Exception {
    try {
      return http.send(r, handler);
    } catch (IOException e) {
      if (!String.valueOf(e.getMessage()).contains("received no bytes")) throw e;
      return http.send(r, handler);
    }
  }

  private String post(String path, ObjectNode body) throws Exception {
    HttpRequest r =
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
            .header("Content-Type", "application/json")
            .timeout(Duration.ofMinutes(10))
            .POST(HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(body)))
            .build();
    HttpResponse<String> resp;
    try {
      resp = http.send(r, HttpResponse.BodyHandlers.ofString());
    } catch (IOException e) {
      // llama-server may close a kept-alive connection just as the client reuses it ("header
      // parser received no bytes", seen once in 32 concurrent requests); the JDK client retries
      // no POST, so the bench does, once (its time counts in the figure: against the peer)
      if (!(e.getCause() instanceof java.io.EOFException)
          && !String.valueOf(e.getMessage()).contains("received no bytes")) throw e;
      resp = http.send(r, HttpResponse.BodyHandlers.ofString());
    }
    if (resp.statusCode() != 200)
      throw new IOException("HTTP " + resp.statusCode() + ": " + resp.body());
    return resp.body();
  }

  @Override
  public void close() throws Exception {
    process.destroy();
    if (!process.waitFor(30, TimeUnit.SECONDS)) process.destroyForcibly();
  }
}
