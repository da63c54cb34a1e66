package dev.troupe.gateway.http;

import static org.apache.pekko.http.javadsl.server.Directives.completeWithFuture;
import static org.apache.pekko.http.javadsl.server.Directives.extractRequest;
import static org.apache.pekko.http.javadsl.server.Directives.path;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.Done;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Connections of the bound server over raw sockets, with a 1 s idle timeout: a held request may
 * stay silent longer and still answer; an idle connection is closed; a client closing its socket
 * while its answer is pending is reported at once, even with {@code Connection: close}.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ClientConnectionsTest {
  private final ActorTestKit testKit =
      ActorTestKit.create(
          ConfigFactory.parseString("pekko.http.server.idle-timeout = 1s")
              .withFallback(ConfigFactory.load()));
  private ServerBinding binding;
  private volatile CompletableFuture<Done> lastClosed = new CompletableFuture<>();
  private volatile CompletableFuture<HttpResponse> answer = new CompletableFuture<>();

  @BeforeAll
  void bind() throws Exception {
    GatewaySettings settings = GatewaySettings.of(0, List.of());
    var route =
        ApiRoutes.builder(settings)
            .add(
                () ->
                    path(
                        "held",
                        () ->
                            extractRequest(
                                request -> {
                                  var c = ClientConnections.of(request).orElseThrow();
                                  c.closed().thenAccept(lastClosed::complete);
                                  return completeWithFuture(c.holdOpenUntil(answer));
                                })))
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

  private Socket connect() throws Exception {
    Socket s = new Socket("127.0.0.1", binding.localAddress().getPort());
    s.setSoTimeout(10_000);
    return s;
  }

  private static void send(Socket s, String extraHeader) throws Exception {
    OutputStream out = s.getOutputStream();
    out.write(
        ("GET /held HTTP/1.1\r\nHost: x\r\n" + extraHeader + "\r\n")
            .getBytes(StandardCharsets.US_ASCII));
    out.flush();
  }

  private static String readAll(Socket s) throws Exception {
    InputStream in = s.getInputStream();
    return new String(in.readAllBytes(), StandardCharsets.UTF_8);
  }

  private void reset() {
    lastClosed = new CompletableFuture<>();
    answer = new CompletableFuture<>();
  }

  @Test
  void aHeldRequestOutlivesTheIdleTimeoutAndAnIdleConnectionIsClosed() throws Exception {
    reset();
    try (Socket s = connect()) {
      send(s, "");
      Thread.sleep(2_500); // well past the 1 s idle timeout, nothing written either way
      answer.complete(HttpResponse.create().withEntity("done"));
      byte[] head = new byte[12];
      assertEquals(12, s.getInputStream().readNBytes(head, 0, 12));
      assertEquals("HTTP/1.1 200", new String(head, StandardCharsets.US_ASCII));
      // Then nothing is pending: the connection is idle and the server closes it.
      long start = System.nanoTime();
      String rest = readAll(s);
      assertTrue(rest.endsWith("done"), rest);
      long waited = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
      assertTrue(waited < 5_000, "closed after " + waited + " ms");
    }
  }

  @Test
  void aClientClosingWhileItsAnswerIsPendingIsReportedAtOnce() throws Exception {
    for (String header : List.of("", "Connection: close\r\n")) {
      reset();
      Socket s = connect();
      send(s, header);
      Thread.sleep(1_500);
      assertFalse(lastClosed.isDone(), "the client is still there (" + header.trim() + ")");
      s.close();
      lastClosed.get(3, TimeUnit.SECONDS);
      answer.complete(HttpResponse.create().withEntity("too late"));
    }
  }
}
