package dev.troupe.gateway.routes;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.typesafe.config.ConfigFactory;
import dev.troupe.gateway.chat.GenerationStream;
import dev.troupe.gateway.http.ApiRoutes;
import dev.troupe.gateway.http.GatewayServer;
import dev.troupe.gateway.http.GatewaySettings;
import dev.troupe.gateway.replicas.ModelCatalog;
import dev.troupe.gateway.replicas.ServedModel;
import dev.troupe.gateway.testing.LogCapture;
import dev.troupe.protocol.Json;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Cancel;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Command;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Generate;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Non-streaming chat over real HTTP with a 300 ms idle timeout: every answer is a plain response
 * with its real status, sent when complete — a slow one too, however long the connection stays
 * silent — and a client that closes its connection mid-generation cancels its request.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class NonStreamingOverHttpTest {
  private final ActorTestKit testKit =
      ActorTestKit.create(
          ConfigFactory.parseString("pekko.http.server.idle-timeout = 300ms")
              .withFallback(ConfigFactory.load()));
  private final HttpClient http =
      HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
  private TestProbe<Object> seen;
  private ServerBinding binding;

  @BeforeAll
  void bind() throws Exception {
    seen = testKit.createTestProbe();
    ActorRef<Command> worker = testKit.spawn(FakeWorker.create("fcfs", seen.ref()));
    ModelCatalog models =
        ModelCatalog.inTurn(
            testKit.system(),
            List.of(ServedModel.of("fake", 1, "x")),
            id -> worker,
            Duration.ofSeconds(3));
    GatewaySettings settings = GatewaySettings.of(0, List.of());
    var route = ApiRoutes.builder(settings).add(new ChatCompletionsRoute(models)).build();
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

  private HttpRequest chat(String prompt) {
    return HttpRequest.newBuilder(
            URI.create(
                "http://127.0.0.1:" + binding.localAddress().getPort() + "/v1/chat/completions"))
        .header("Content-Type", "application/json")
        .POST(
            HttpRequest.BodyPublishers.ofString(
                "{\"messages\":[{\"role\":\"user\",\"content\":\"" + prompt + "\"}]}"))
        .build();
  }

  @Test
  void aQuickAnswerIsAPlainResponse() throws Exception {
    HttpResponse<String> r = http.send(chat("Hi"), HttpResponse.BodyHandlers.ofString());
    assertEquals(200, r.statusCode());
    assertTrue(r.headers().firstValue("content-length").isPresent(), "a strict entity");
    assertEquals(
        "Hello world",
        Json.mapper()
            .readTree(r.body())
            .path("choices")
            .get(0)
            .path("message")
            .path("content")
            .asText());
  }

  @Test
  void aSlowAnswerIsAPlainResponseAfterASilenceLongerThanTheIdleTimeout() throws Exception {
    HttpResponse<String> r = http.send(chat("slow"), HttpResponse.BodyHandlers.ofString());
    assertEquals(200, r.statusCode());
    assertTrue(r.headers().firstValue("content-length").isPresent(), "a strict entity");
    JsonNode j = Json.mapper().readTree(r.body());
    assertEquals("Hello world", j.path("choices").get(0).path("message").path("content").asText());
    assertEquals("chat.completion", j.path("object").asText());
  }

  @Test
  void aFailureAfterTheFirstTokensIsItsOwnStatusNeverA200() throws Exception {
    HttpResponse<String> r;
    try (LogCapture log = LogCapture.of(GenerationStream.class)) {
      r = http.send(chat("crash midway"), HttpResponse.BodyHandlers.ofString());
      assertEquals(1, log.errors().size(), "the worker's reason is logged: " + log.errors());
    }
    assertEquals(500, r.statusCode(), r.body());
    assertEquals(
        "InternalServerError",
        Json.mapper().readTree(r.body()).path("error").path("type").asText(),
        r.body());
  }

  @Test
  void aClientThatGoesAwayCancelsItsRequest() throws Exception {
    String body = "{\"messages\":[{\"role\":\"user\",\"content\":\"hang\"}]}";
    Socket socket = new Socket("127.0.0.1", binding.localAddress().getPort());
    OutputStream out = socket.getOutputStream();
    out.write(
        ("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                + "Content-Length: "
                + body.length()
                + "\r\n\r\n"
                + body)
            .getBytes(StandardCharsets.US_ASCII));
    out.flush();
    String id;
    while (true) {
      Object m = seen.receiveMessage(Duration.ofSeconds(5));
      if (m instanceof Generate g && "hang".equals(g.request().messages().get(0).get("content"))) {
        id = g.request().requestId();
        break;
      }
    }
    Thread.sleep(600); // silent past the idle timeout: the held connection stays
    assertTrue(!socket.isClosed());
    socket.close();
    while (true) {
      Object m = seen.receiveMessage(Duration.ofSeconds(5));
      if (m instanceof Cancel c && c.requestId().equals(id)) break;
    }
  }
}
