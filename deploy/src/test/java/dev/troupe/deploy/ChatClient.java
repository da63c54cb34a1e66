package dev.troupe.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.protocol.Json;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;

/**
 * Chat completions over real HTTP for the multi-node tests: one seeded request (the same prompt,
 * seed and length every time, so every run of it gives the same tokens), streamed or whole, read as
 * token ids ({@code return_token_ids}).
 */
final class ChatClient {
  private static final Duration WAIT = Duration.ofMinutes(2);
  private final HttpClient http =
      HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
  private final String host;
  private final int port;
  private final String key;

  ChatClient(int port, String key) {
    this("127.0.0.1", port, key);
  }

  ChatClient(String host, int port, String key) {
    this.host = host;
    this.port = port;
    this.key = key;
  }

  static String body(boolean stream, int maxTokens) {
    return """
        {"model":"demo","messages":[{"role":"user","content":"Tell me a long story"}],
         "stream":%s,"max_tokens":%d,"temperature":0.9,"seed":4321,"ignore_eos":true,
         "return_token_ids":true}"""
        .formatted(stream, maxTokens);
  }

  private HttpRequest chat(String body) {
    return HttpRequest.newBuilder(
            URI.create("http://" + host + ":" + port + "/v1/chat/completions"))
        .header("Content-Type", "application/json")
        .header("Authorization", "Bearer " + key)
        .timeout(WAIT)
        .POST(HttpRequest.BodyPublishers.ofString(body))
        .build();
  }

  /** The seeded request, non-streaming: its status and body. */
  CompletableFuture<HttpResponse<String>> whole(int maxTokens) {
    return http.sendAsync(chat(body(false, maxTokens)), HttpResponse.BodyHandlers.ofString());
  }

  /** The generated token ids of a 200 answer. */
  static List<Integer> tokenIds(HttpResponse<String> r) {
    assertEquals(200, r.statusCode(), r.body());
    List<Integer> ids = new ArrayList<>();
    try {
      Json.mapper()
          .readTree(r.body())
          .path("choices")
          .get(0)
          .path("token_ids")
          .forEach(t -> ids.add(t.asInt()));
    } catch (Exception e) {
      throw new AssertionError(r.body(), e);
    }
    return ids;
  }

  /**
   * The seeded request, streamed: its token ids in order, once {@code [DONE]} came (an error event
   * fails it); {@code seen} counts the tokens as they come.
   */
  CompletableFuture<List<Integer>> stream(int maxTokens, AtomicInteger seen) {
    return CompletableFuture.supplyAsync(
        () -> {
          try {
            HttpResponse<Stream<String>> r =
                http.send(chat(body(true, maxTokens)), HttpResponse.BodyHandlers.ofLines());
            assertEquals(200, r.statusCode());
            List<Integer> ids = new ArrayList<>();
            boolean done = false;
            for (String line : (Iterable<String>) r.body()::iterator) {
              if (!line.startsWith("data: ")) continue;
              String data = line.substring(6);
              if (data.equals("[DONE]")) {
                done = true;
                break;
              }
              JsonNode chunk = Json.mapper().readTree(data);
              assertFalse(chunk.has("error"), "an error event: " + data);
              for (JsonNode c : chunk.path("choices"))
                c.path("token_ids")
                    .forEach(
                        t -> {
                          ids.add(t.asInt());
                          seen.incrementAndGet();
                        });
            }
            assertTrue(done, "the stream ended with [DONE]");
            return ids;
          } catch (Exception e) {
            throw new CompletionException(e);
          }
        });
  }
}
