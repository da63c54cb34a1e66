package dev.troupe.gateway.routes;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.typesafe.config.ConfigFactory;
import dev.troupe.gateway.chat.MigrationSettings;
import dev.troupe.gateway.http.ApiRoutes;
import dev.troupe.gateway.http.GatewayServer;
import dev.troupe.gateway.http.GatewaySettings;
import dev.troupe.gateway.metrics.ServingMetrics;
import dev.troupe.gateway.replicas.ModelCatalog;
import dev.troupe.gateway.replicas.ServedModel;
import dev.troupe.protocol.Json;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Accepted;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.ChoiceUpdate;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Command;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.FinishReason;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Generate;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationUpdate;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Started;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Usage;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Chat over real HTTP (300 ms idle timeout, 2 s migration deadline, 20 s ask timeout) with a worker
 * that stays silent longer than the idle timeout: a request no worker starts gets a 503 in the
 * OpenAI shape within the deadline — a stream before its first byte, streaming or not — never a
 * closed connection or a hang; and a stream silent past the idle timeout completes and leaves its
 * connection usable for the next request.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class SilentWorkerOverHttpTest {
  private static final Duration DEADLINE = Duration.ofSeconds(2);

  private final ActorTestKit testKit =
      ActorTestKit.create(
          ConfigFactory.parseString("pekko.http.server.idle-timeout = 300ms")
              .withFallback(ConfigFactory.load()));
  private final HttpClient http =
      HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
  private ServerBinding binding;

  @BeforeAll
  void bind() throws Exception {
    ActorRef<Command> worker = testKit.spawn(silentWorker());
    ModelCatalog models =
        ModelCatalog.inTurn(
            testKit.system(),
            List.of(ServedModel.of("fake", 1, "x")),
            id -> worker,
            Duration.ofSeconds(20));
    MigrationSettings migration =
        new MigrationSettings(true, 3, DEADLINE, Duration.ofMillis(100), Duration.ofMillis(500));
    GatewaySettings settings = GatewaySettings.of(0, List.of());
    var route =
        ApiRoutes.builder(settings)
            .add(new ChatCompletionsRoute(models, new ServingMetrics(), migration))
            .build();
    binding =
        GatewayServer.bind(testKit.system(), settings, route)
            .toCompletableFuture()
            .get(10, TimeUnit.SECONDS);
  }

  @AfterAll
  void unbind() throws Exception {
    binding.terminate(Duration.ofSeconds(1)).toCompletableFuture().get(5, TimeUnit.SECONDS);
    testKit.shutdownTestKit();
  }

  /**
   * {@link FakeWorker}, except for three prompts: {@code "silent"} is never acknowledged (a replica
   * sharding cannot reach), {@code "queued"} is acknowledged at once and answered 3 s later (past
   * the 2 s deadline: a worker that keeps it queued), and {@code "stall"} sends its first token,
   * then after 2.5 s the rest.
   */
  private static Behavior<Command> silentWorker() {
    return Behaviors.setup(
        ctx -> {
          ActorRef<Command> fake =
              ctx.spawn(FakeWorker.create("fcfs", ctx.getSystem().ignoreRef()), "fake");
          return Behaviors.receive(Command.class)
              .onMessage(
                  Generate.class,
                  g -> {
                    String id = g.request().requestId();
                    switch (String.valueOf(g.request().messages().get(0).get("content"))) {
                      case "silent" -> {}
                      case "queued" -> {
                        g.replyTo().tell(new Accepted(id, "fake#0", ctx.getSelf()));
                        Started started = new Started("fake#0", ctx.getSelf(), 0, 3, null, null);
                        CompletableFuture.delayedExecutor(3000, TimeUnit.MILLISECONDS)
                            .execute(
                                () ->
                                    g.replyTo()
                                        .tell(
                                            new GenerationUpdate(
                                                id,
                                                started,
                                                List.of(
                                                    new ChoiceUpdate(
                                                        0,
                                                        "Queued",
                                                        List.of(300),
                                                        null,
                                                        FinishReason.STOP,
                                                        null)),
                                                new Usage(3, 1, 0))));
                      }
                      case "stall" -> {
                        Started started = new Started("fake#0", ctx.getSelf(), 0, 3, null, null);
                        g.replyTo()
                            .tell(
                                new GenerationUpdate(
                                    id,
                                    started,
                                    List.of(
                                        new ChoiceUpdate(
                                            0, "Hello", List.of(100), null, null, null)),
                                    null));
                        CompletableFuture.delayedExecutor(2500, TimeUnit.MILLISECONDS)
                            .execute(
                                () ->
                                    g.replyTo()
                                        .tell(
                                            new GenerationUpdate(
                                                id,
                                                null,
                                                List.of(
                                                    new ChoiceUpdate(
                                                        0,
                                                        " world",
                                                        List.of(200),
                                                        null,
                                                        FinishReason.STOP,
                                                        null)),
                                                new Usage(3, 2, 0))));
                      }
                      default -> fake.tell(g);
                    }
                    return Behaviors.same();
                  })
              .onAnyMessage(
                  m -> {
                    fake.tell(m);
                    return Behaviors.same();
                  })
              .build();
        });
  }

  private HttpRequest chat(String prompt, boolean stream) {
    return HttpRequest.newBuilder(
            URI.create(
                "http://127.0.0.1:" + binding.localAddress().getPort() + "/v1/chat/completions"))
        .header("Content-Type", "application/json")
        .timeout(Duration.ofSeconds(15))
        .POST(HttpRequest.BodyPublishers.ofString(body(prompt, stream)))
        .build();
  }

  private static String body(String prompt, boolean stream) {
    return "{\"stream\":"
        + stream
        + ",\"messages\":[{\"role\":\"user\",\"content\":\""
        + prompt
        + "\"}]}";
  }

  /** A 503 in the OpenAI error shape whose message names why nothing started. */
  private static void assertNotStarted(HttpResponse<String> r, String reason) throws Exception {
    assertEquals(503, r.statusCode(), r.body());
    assertTrue(
        r.headers().firstValue("content-type").orElse("").startsWith("application/json"),
        r.headers().toString());
    JsonNode error = Json.mapper().readTree(r.body()).path("error");
    assertEquals("ServiceUnavailableError", error.path("type").asText(), r.body());
    assertEquals(503, error.path("code").asInt(), r.body());
    String message = error.path("message").asText();
    assertTrue(message.contains("No model worker started this request within 2 s"), message);
    assertTrue(message.contains(reason), message);
  }

  /**
   * A request a live worker accepted waits in its queue past the deadline, as in vLLM's queue: the
   * deadline bounds only the wait for a worker to take it.
   */
  @Test
  void aStreamAcceptedAndQueuedPastTheDeadlineCompletes() throws Exception {
    HttpResponse<String> r = http.send(chat("queued", true), HttpResponse.BodyHandlers.ofString());
    assertEquals(200, r.statusCode(), r.body());
    assertTrue(r.body().contains("Queued") && r.body().contains("data: [DONE]"), r.body());
  }

  @Test
  void aNonStreamingRequestAcceptedAndQueuedPastTheDeadlineCompletes() throws Exception {
    HttpResponse<String> r = http.send(chat("queued", false), HttpResponse.BodyHandlers.ofString());
    assertEquals(200, r.statusCode(), r.body());
    assertEquals(
        "Queued",
        Json.mapper()
            .readTree(r.body())
            .path("choices")
            .path(0)
            .path("message")
            .path("content")
            .asText(),
        r.body());
  }

  @Test
  void aStreamNeverAcknowledgedGetsA503BeforeTheAskTimeout() throws Exception {
    long t0 = System.nanoTime();
    HttpResponse<String> r = http.send(chat("silent", true), HttpResponse.BodyHandlers.ofString());
    assertNotStarted(r, "has not acknowledged it");
    assertTrue(System.nanoTime() - t0 < Duration.ofSeconds(15).toNanos(), "before the 20 s ask");
  }

  /**
   * A stream silent for longer than the idle timeout between its first and last event completes,
   * and the connection then takes the next request: the idle timeout counts only between requests.
   */
  @Test
  void aConnectionStaysUsableAfterAStreamSilentPastTheIdleTimeout() throws Exception {
    try (Socket socket = new Socket("127.0.0.1", binding.localAddress().getPort())) {
      socket.setSoTimeout(15_000);
      OutputStream out = socket.getOutputStream();
      InputStream in = socket.getInputStream();
      send(out, body("stall", true));
      String first = readUntil(in, "0\r\n\r\n");
      assertTrue(first.startsWith("HTTP/1.1 200"), first);
      assertTrue(first.contains("Hello") && first.contains(" world"), first);
      assertTrue(first.contains("data: [DONE]"), first);
      send(out, body("Hi", false));
      String second = readUntil(in, "\"object\":\"chat.completion\"");
      assertTrue(second.startsWith("HTTP/1.1 200"), second);
    }
  }

  private static void send(OutputStream out, String body) throws Exception {
    out.write(
        ("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                + "Content-Length: "
                + body.getBytes(StandardCharsets.UTF_8).length
                + "\r\n\r\n"
                + body)
            .getBytes(StandardCharsets.UTF_8));
    out.flush();
  }

  /** Reads until {@code end} has been read; fails if the server closes the connection first. */
  private static String readUntil(InputStream in, String end) throws Exception {
    ByteArrayOutputStream seen = new ByteArrayOutputStream();
    while (true) {
      int b = in.read();
      String text = seen.toString(StandardCharsets.UTF_8);
      if (b < 0) throw new AssertionError("the server closed the connection after: " + text);
      seen.write(b);
      if (text.endsWith(end.substring(0, end.length() - 1)) && b == end.charAt(end.length() - 1))
        return seen.toString(StandardCharsets.UTF_8);
    }
  }
}
