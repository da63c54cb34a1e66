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
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.stream.Stream;

/** The HTTP side of {@link PrefixCacheBench}: streamed chats, prompts of a given token length. */
final class StreamedChats {
  static final String KEY = "sk-bench";
  static final String MODEL = "bench";
  private static final ObjectMapper JSON = new ObjectMapper();

  private StreamedChats() {}

  /**
   * One streamed chat: times in ns from sending, tokens generated, what usage and routing said, the
   * answer's text.
   */
  record Sample(
      long ttft,
      long end,
      int tokens,
      int promptTokens,
      int cachedTokens,
      String route,
      String content) {}

  static Sample chat(
      HttpClient http, String url, String system, String user, int maxTokens, double temperature)
      throws Exception {
    return chat(
        http,
        url,
        List.of(
            Map.of("role", "system", "content", system), Map.of("role", "user", "content", user)),
        maxTokens,
        temperature);
  }

  /** One streamed chat completion ({@code ignore_eos}, usage in the last chunk). */
  static Sample chat(
      HttpClient http,
      String url,
      List<Map<String, String>> messages,
      int maxTokens,
      double temperature)
      throws Exception {
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("model", MODEL);
    body.put("messages", messages);
    body.put("max_tokens", maxTokens);
    body.put("ignore_eos", true);
    body.put("temperature", temperature);
    body.put("stream", true);
    body.put("stream_options", Map.of("include_usage", true));
    body.put("return_token_ids", true);
    HttpRequest request =
        HttpRequest.newBuilder(URI.create(url))
            .header("Content-Type", "application/json")
            .header("Authorization", "Bearer " + KEY)
            .POST(HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(body)))
            .build();
    long t0 = System.nanoTime();
    HttpResponse<Stream<String>> response = http.send(request, HttpResponse.BodyHandlers.ofLines());
    if (response.statusCode() != 200)
      throw new IllegalStateException(
          "HTTP " + response.statusCode() + ": " + String.join("\n", response.body().toList()));
    String route = response.headers().firstValue("X-Troupe-Route").orElse("");
    long first = -1;
    int tokens = 0, prompt = 0, cached = 0;
    StringBuilder content = new StringBuilder();
    try (Stream<String> lines = response.body()) {
      for (String line : (Iterable<String>) lines::iterator) {
        if (!line.startsWith("data: ") || line.equals("data: [DONE]")) continue;
        JsonNode chunk = JSON.readTree(line.substring(6));
        if (chunk.has("error")) throw new IllegalStateException(line);
        for (JsonNode choice : chunk.path("choices")) {
          content.append(choice.path("delta").path("content").asText(""));
          int n = choice.path("token_ids").size();
          if (n > 0 && first < 0) first = System.nanoTime() - t0;
          tokens += n;
        }
        JsonNode usage = chunk.path("usage");
        if (usage.isObject()) {
          prompt = usage.path("prompt_tokens").asInt();
          cached = usage.path("prompt_tokens_details").path("cached_tokens").asInt(0);
        }
      }
    }
    return new Sample(
        first, System.nanoTime() - t0, tokens, prompt, cached, route, content.toString());
  }

  /**
   * English-like text of about {@code tokens} tokens (as the model's tokenizer counts, through
   * {@code /tokenize}) that starts with {@code label}, so no two labels share a first block.
   */
  static String text(HttpClient http, String tokenizeUrl, int tokens, String label)
      throws Exception {
    String[] words = {
      "the",
      "agent",
      "must",
      "answer",
      "with",
      "care",
      "and",
      "cite",
      "each",
      "rule",
      "before",
      "acting",
      "on",
      "a",
      "tool",
      "call",
      "when",
      "user",
      "asks",
      "for",
      "data",
      "from",
      "cluster",
      "reward",
      "is",
      "given",
      "only",
      "if",
      "final",
      "result",
      "matches",
      "expected",
      "format",
      "keep",
      "replies",
      "short",
      "never",
      "invent",
      "facts",
      "about",
      "state",
      "of",
      "system"
    };
    SplittableRandom random = new SplittableRandom(label.hashCode());
    StringBuilder all = new StringBuilder(label).append(".");
    for (int i = 0; i < tokens * 2; i++)
      all.append(' ').append(words[random.nextInt(words.length)]);
    String full = all.toString();
    // Bisect on the number of characters: tokens grow monotonically with them here.
    int lo = label.length(), hi = full.length();
    while (hi - lo > 8) {
      int mid = (lo + hi) / 2;
      if (count(http, tokenizeUrl, full.substring(0, mid)) < tokens) lo = mid;
      else hi = mid;
    }
    return full.substring(0, hi);
  }

  static int count(HttpClient http, String tokenizeUrl, String text)
      throws IOException, InterruptedException {
    String body = JSON.writeValueAsString(Map.of("model", MODEL, "prompt", text));
    HttpResponse<String> r =
        http.send(
            HttpRequest.newBuilder(URI.create(tokenizeUrl))
                .header("Content-Type", "application/json")
                .header("Authorization", "Bearer " + KEY)
                .POST(HttpRequest.BodyPublishers.ofString(body))
                .build(),
            HttpResponse.BodyHandlers.ofString());
    if (r.statusCode() != 200) throw new IllegalStateException(r.body());
    return JSON.readTree(r.body()).path("count").asInt();
  }

  static String field(String route, String name) {
    for (String part : route.split(";\\s*"))
      if (part.startsWith(name + "=")) return part.substring(name.length() + 1);
    return "?";
  }

  static String uptime() {
    try {
      String s = Files.readString(Path.of("/proc/loadavg")).trim();
      return String.join(" ", List.of(s.split(" ")).subList(0, 3));
    } catch (IOException e) {
      return "?";
    }
  }

  static double quantile(List<Double> values, double q) {
    return LoadBench.quantile(values, q);
  }
}
