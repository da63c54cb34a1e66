package dev.troupe.gateway.http;

import static org.apache.pekko.http.javadsl.server.Directives.path;
import static org.apache.pekko.http.javadsl.server.Directives.post;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.gateway.routes.HealthRoute;
import dev.troupe.protocol.Json;
import java.io.ByteArrayOutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.slf4j.LoggerFactory;

/**
 * Requests Pekko HTTP's parser or entity stream refuses, written byte for byte on a socket (issue
 * 21): each is answered in the API's error shape with a 4xx, and a client that goes away mid-body
 * costs one log line, no stack trace. Before: a raw space in the target was a plain-text 505,
 * malformed chunked encoding a 500, and each disconnected client an ERROR with its stack.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class MalformedRequestsTest {
  private static final String JSON_POST =
      "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n";
  private final ActorTestKit testKit = ActorTestKit.create();
  private ServerBinding binding;

  record Body(String text) {}

  @BeforeAll
  void bind() throws Exception {
    GatewaySettings settings = GatewaySettings.of(0, List.of());
    var route =
        ApiRoutes.builder(settings)
            .add(new HealthRoute(() -> CompletableFuture.completedFuture(true)))
            .add(
                () ->
                    path(
                        "echo",
                        () ->
                            post(
                                () ->
                                    JsonBodies.entity(
                                        Body.class,
                                        b ->
                                            JsonBodies.completeJson(
                                                Map.of("len", b.text().length()))))))
            .build();
    binding =
        GatewayServer.bind(testKit.system(), settings, route)
            .toCompletableFuture()
            .get(10, TimeUnit.SECONDS);
  }

  @AfterAll
  void unbind() throws Exception {
    binding
        .terminate(java.time.Duration.ofSeconds(1))
        .toCompletableFuture()
        .get(5, TimeUnit.SECONDS);
    testKit.shutdownTestKit();
  }

  /** Writes {@code request}, half-closes, and returns everything the server sent back. */
  private String exchange(String request) throws Exception {
    try (Socket s = new Socket("127.0.0.1", binding.localAddress().getPort())) {
      s.setSoTimeout(10_000);
      s.getOutputStream().write(request.getBytes(StandardCharsets.ISO_8859_1));
      s.shutdownOutput();
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      s.getInputStream().transferTo(out);
      return out.toString(StandardCharsets.ISO_8859_1);
    }
  }

  /** Asserts the status line and an OpenAI error body of that code; returns its message. */
  private String assertError(String request, int status, String type) throws Exception {
    String response = exchange(request);
    assertTrue(response.startsWith("HTTP/1.1 " + status + " "), response);
    assertTrue(response.contains("Content-Type: application/json"), response);
    JsonNode error =
        Json.mapper().readTree(response.substring(response.indexOf("\r\n\r\n") + 4)).path("error");
    assertEquals(status, error.path("code").asInt(), response);
    assertEquals(type, error.path("type").asText(), response);
    return error.path("message").asText();
  }

  @Test
  void aRawSpaceInTheTargetIsABadRequest() throws Exception {
    String message =
        assertError("GET /hea lth HTTP/1.1\r\nHost: x\r\n\r\n", 400, "BadRequestError");
    assertTrue(message.contains("request line"), message);
    assertError("GET /health HTTP/3.0\r\nHost: x\r\n\r\n", 400, "BadRequestError");
  }

  @Test
  void unknownMethodsAndTheHttp2PrefaceStayNotImplemented() throws Exception {
    for (String line : List.of("get /health HTTP/1.1", "BREW /health HTTP/1.1", "PRI * HTTP/2.0"))
      assertError(line + "\r\nHost: x\r\n\r\n", 501, "NotImplementedError");
  }

  @Test
  void otherParserErrorsKeepTheirStatusInTheApiShape() throws Exception {
    String message = assertError("GET /health HTTP/1.1\r\n\r\n", 400, "BadRequestError");
    assertTrue(message.contains("Host"), message);
    assertError(
        "GET /" + "a".repeat(3000) + " HTTP/1.1\r\nHost: x\r\n\r\n", 414, "URITooLongError");
  }

  @Test
  void malformedChunkedEncodingIsABadRequest() throws Exception {
    String chunked = JSON_POST + "Transfer-Encoding: chunked\r\n\r\n";
    for (String size : List.of("ZZZ", "10000000000000000", "-1")) {
      String message = assertError(chunked + size + "\r\nabc\r\n0\r\n\r\n", 400, "BadRequestError");
      assertTrue(message.startsWith("Cannot read the request body"), message);
    }
    // the same encoding well-formed is served
    String ok = exchange(chunked + "e\r\n{\"text\":\"abc\"}\r\n0\r\n\r\n");
    assertTrue(ok.startsWith("HTTP/1.1 200 "), ok);
  }

  private String echo(byte[] body) throws Exception {
    String head = JSON_POST + "Content-Length: " + body.length + "\r\n\r\n";
    byte[] all = new byte[head.length() + body.length];
    System.arraycopy(head.getBytes(StandardCharsets.ISO_8859_1), 0, all, 0, head.length());
    System.arraycopy(body, 0, all, head.length(), body.length);
    return exchange(new String(all, StandardCharsets.ISO_8859_1));
  }

  /**
   * Issue 21 (found by the hostile suite): Jackson's byte parser took an overlong {@code C0 80} as
   * U+0000 and a UTF-8-encoded surrogate as a lone surrogate, so bodies that are not UTF-8 were
   * served. They are a 400 now; real UTF-8 and UTF-16 bodies are still read.
   */
  @Test
  void aBodyThatIsNotUtf8IsABadRequest() throws Exception {
    for (String bad : List.of("\u00c0\u0080", "\u00ed\u00a0\u0080", "\u00ff", "\u00e2\u0082")) {
      String response = echo(("{\"text\":\"" + bad + "\"}").getBytes(StandardCharsets.ISO_8859_1));
      assertTrue(response.startsWith("HTTP/1.1 400 "), response);
      assertTrue(response.contains("not valid UTF-8 at byte 9"), response);
    }
    String utf8 = echo("{\"text\":\"\u00e9\ud83d\ude00\"}".getBytes(StandardCharsets.UTF_8));
    assertTrue(utf8.endsWith("{\"len\":3}"), utf8);
    String utf16 = echo("{\"text\":\"ab\"}".getBytes(StandardCharsets.UTF_16));
    assertTrue(utf16.endsWith("{\"len\":2}"), utf16);
  }

  @Test
  void aClientThatLeavesMidBodyCostsOneLineAtMost() throws Exception {
    Logger root = (Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
    Logger ours = (Logger) LoggerFactory.getLogger("dev.troupe.gateway");
    ListAppender<ILoggingEvent> seen = new ListAppender<>();
    seen.start();
    root.addAppender(seen);
    Level before = ours.getLevel();
    ours.setLevel(Level.INFO);
    int clients = 20;
    try {
      for (int i = 0; i < clients; i++) {
        try (Socket s = new Socket("127.0.0.1", binding.localAddress().getPort())) {
          s.getOutputStream()
              .write(
                  (JSON_POST + "Content-Length: 1000\r\n\r\n{\"te")
                      .getBytes(StandardCharsets.ISO_8859_1));
        }
      }
      // the server is still there, and answers normally
      String ok = exchange(JSON_POST + "Content-Length: 12\r\n\r\n{\"text\":\"a\"}");
      assertTrue(ok.startsWith("HTTP/1.1 200 "), ok);
      Thread.sleep(500); // the last truncations are logged asynchronously
    } finally {
      root.detachAppender(seen);
      ours.setLevel(before);
    }
    List<ILoggingEvent> events = List.copyOf(seen.list);
    for (ILoggingEvent e : events) {
      assertTrue(e.getThrowableProxy() == null, "a stack trace was logged: " + e);
      assertTrue(e.getLevel().toInt() < Level.WARN.toInt(), "logged at " + e.getLevel() + ": " + e);
    }
    assertTrue(events.size() <= clients, events.size() + " lines for " + clients + " clients");
  }
}
