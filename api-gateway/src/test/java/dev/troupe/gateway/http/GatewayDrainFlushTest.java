package dev.troupe.gateway.http;

import static org.apache.pekko.http.javadsl.server.Directives.complete;
import static org.apache.pekko.http.javadsl.server.Directives.completeWithFuture;
import static org.apache.pekko.http.javadsl.server.Directives.path;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.Done;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.StatusCodes;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A draining server ({@link GatewayServer#terminate}) over raw sockets: a streamed body whose last
 * chunk has left the response stream but not yet the server's socket buffer — its client reads
 * slowly — still reaches the client whole, after the drain and Pekko's termination; an idle
 * keep-alive connection is closed at once; a pending answer comes with {@code Connection: close}.
 *
 * <p>Before: the drain counted a streamed response done when its body's source completed, and then
 * Pekko's termination aborted the connection (a TCP reset), discarding the bytes the client had not
 * read yet — what cut GatewayDrainTest's stream now and then on a loaded machine.
 */
class GatewayDrainFlushTest {
  private static final int CHUNKS = 24;
  private static final int CHUNK = 1024;
  private static final int TICKS = 40;

  private final ActorTestKit testKit = ActorTestKit.create();
  private final CompletableFuture<Done> bodyWritten = new CompletableFuture<>();
  private final CompletableFuture<HttpResponse> pending = new CompletableFuture<>();
  private ServerBinding binding;

  @AfterEach
  void stop() {
    testKit.shutdownTestKit();
  }

  private void bind() throws Exception {
    GatewaySettings settings = GatewaySettings.of(0, List.of());
    byte[] chunk = new byte[CHUNK];
    java.util.Arrays.fill(chunk, (byte) 'x');
    var route =
        ApiRoutes.builder(settings)
            .add(
                () ->
                    path(
                        "big",
                        () ->
                            complete(
                                HttpResponse.create()
                                    .withStatus(StatusCodes.OK)
                                    .withEntity(
                                        HttpEntities.createChunked(
                                            ContentTypes.APPLICATION_OCTET_STREAM,
                                            Source.from(
                                                    Collections.nCopies(
                                                        CHUNKS, ByteString.fromArray(chunk)))
                                                .watchTermination(
                                                    (m, done) -> {
                                                      done.thenAccept(bodyWritten::complete);
                                                      return m;
                                                    }))))))
            .add(() -> path("pending", () -> completeWithFuture(pending)))
            .add(
                () ->
                    path(
                        "ticks",
                        () ->
                            complete(
                                HttpResponse.create()
                                    .withEntity(
                                        HttpEntities.createChunked(
                                            ContentTypes.TEXT_PLAIN_UTF8,
                                            Source.range(1, TICKS)
                                                .throttle(1, Duration.ofMillis(50))
                                                .map(
                                                    i ->
                                                        ByteString.fromString(
                                                            "tick " + i + "\n")))))))
            .add(() -> path("small", () -> complete("small")))
            .build();
    binding =
        GatewayServer.bind(testKit.system(), settings, route)
            .toCompletableFuture()
            .get(10, TimeUnit.SECONDS);
  }

  private Socket connect(int receiveBuffer) throws Exception {
    Socket s = new Socket();
    if (receiveBuffer > 0) s.setReceiveBufferSize(receiveBuffer); // before connecting: the window
    s.connect(new InetSocketAddress("127.0.0.1", binding.localAddress().getPort()));
    s.setSoTimeout(20_000);
    return s;
  }

  private static void get(Socket s, String path) throws Exception {
    s.getOutputStream()
        .write(
            ("GET /" + path + " HTTP/1.1\r\nHost: x\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
    s.getOutputStream().flush();
  }

  private static String readToEnd(InputStream in) throws Exception {
    ByteArrayOutputStream all = new ByteArrayOutputStream();
    byte[] b = new byte[4096];
    for (int n; (n = in.read(b)) >= 0; ) all.write(b, 0, n);
    return all.toString(StandardCharsets.US_ASCII);
  }

  private CompletionStage<?> drain() {
    binding.unbind();
    return GatewayServer.terminate(testKit.system(), binding, Duration.ofSeconds(30));
  }

  @Test
  void aStreamedBodyStillInTheSocketBuffersReachesItsSlowClientWhole() throws Exception {
    bind();
    try (Socket slow = connect(1024)) {
      get(slow, "big");
      // its last chunk has left the response stream; most of it waits in the server's buffers
      bodyWritten.get(10, TimeUnit.SECONDS);
      // the drain, Pekko's termination included, is over before the client reads a byte more
      drain().toCompletableFuture().get(10, TimeUnit.SECONDS);

      String answer = readToEnd(slow.getInputStream());
      assertTrue(answer.startsWith("HTTP/1.1 200"), answer.substring(0, 40));
      String body = answer.substring(answer.indexOf("\r\n\r\n") + 4);
      assertEquals(CHUNKS * CHUNK, body.chars().filter(c -> c == 'x').count(), "body bytes");
      assertTrue(body.endsWith("0\r\n\r\n"), "the chunked body's end");
    }
  }

  @Test
  void aStreamThatHasBegunGoesOnToItsEndWhileTheServerDrains() throws Exception {
    bind();
    try (Socket s = connect(0)) {
      get(s, "ticks");
      byte[] head = new byte[12];
      assertEquals(12, s.getInputStream().readNBytes(head, 0, 12));
      Thread.sleep(300);
      CompletableFuture<?> drained = drain().toCompletableFuture();
      Thread.sleep(300);
      assertFalse(drained.isDone(), "the connection stays open while its body streams");
      String rest = readToEnd(s.getInputStream());
      assertTrue(rest.contains("tick " + TICKS + "\n"), rest);
      assertTrue(rest.endsWith("0\r\n\r\n"), rest);
      drained.get(10, TimeUnit.SECONDS);
    }
  }

  @Test
  void anIdleConnectionClosesAtOnceAndAPendingAnswerClosesItsConnection() throws Exception {
    bind();
    try (Socket idle = connect(0);
        Socket waiting = connect(0)) {
      get(idle, "small");
      byte[] head = new byte[12];
      assertEquals(12, idle.getInputStream().readNBytes(head, 0, 12));
      get(waiting, "pending");
      Thread.sleep(300);

      CompletableFuture<?> drained = drain().toCompletableFuture();
      String rest = readToEnd(idle.getInputStream()); // closed by the server, keep-alive or not
      assertTrue(rest.endsWith("small"), rest);
      assertFalse(drained.isDone(), "an answer is still pending");

      pending.complete(HttpResponse.create().withEntity("late"));
      String late = readToEnd(waiting.getInputStream());
      assertTrue(late.startsWith("HTTP/1.1 200"), late);
      assertTrue(late.toLowerCase().contains("connection: close"), late);
      assertTrue(late.endsWith("late"), late);
      drained.get(10, TimeUnit.SECONDS);
    }
  }
}
