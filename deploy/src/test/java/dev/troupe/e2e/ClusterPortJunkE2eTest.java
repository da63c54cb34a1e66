package dev.troupe.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

/**
 * Junk written to the cluster port (issue 21): Artery's TCP framing, given a frame length near
 * 2^31, re-reads the same bytes forever and its decoder logged "Dropping message … Incompatible
 * protocol version" for each, 25-32 MB/s until the disk filled, even after the socket closed. The
 * node bounds Pekko's logging per class ({@code BoundedPekkoLogging}): the flood costs a few dozen
 * lines and one line counting the rest. With remoting over TLS and mutual authentication, as
 * docs/architecture.md describes for clusters on a shared network, the junk never reaches the
 * framing.
 */
class ClusterPortJunkE2eTest {
  /** AKKA, the ordinary-messages stream, a frame length of 0x7fffffff and 4 KB of commas. */
  private static byte[] junk() {
    byte[] junk = new byte[4 + 1 + 4 + 4096];
    System.arraycopy("AKKA".getBytes(StandardCharsets.US_ASCII), 0, junk, 0, 4);
    junk[4] = 1;
    junk[5] = (byte) 0xff; // little-endian
    junk[6] = (byte) 0xff;
    junk[7] = (byte) 0xff;
    junk[8] = (byte) 0x7f;
    Arrays.fill(junk, 9, junk.length, (byte) 0x2c);
    return junk;
  }

  private static void write(int port, byte[] bytes) throws Exception {
    try (Socket s = new Socket("127.0.0.1", port)) {
      s.getOutputStream().write(bytes);
      Thread.sleep(500);
    }
  }

  private static void assertHealthy(ChatServer server) throws Exception {
    HttpResponse<Void> health =
        HttpClient.newHttpClient()
            .send(
                HttpRequest.newBuilder(URI.create(server.baseUrl() + "/health")).build(),
                HttpResponse.BodyHandlers.discarding());
    assertEquals(200, health.statusCode());
  }

  @Test
  void junkOnTheClusterPortLogsABoundedAmount() throws Exception {
    Logger decoder = (Logger) LoggerFactory.getLogger("org.apache.pekko.remote.artery.Decoder");
    Logger bound = (Logger) LoggerFactory.getLogger("dev.troupe.deploy.BoundedPekkoLogging");
    ListAppender<ILoggingEvent> drops = new ListAppender<>();
    ListAppender<ILoggingEvent> counts = new ListAppender<>();
    drops.start();
    counts.start();
    try (ChatServer server = ChatServer.start()) {
      decoder.addAppender(drops);
      bound.addAppender(counts);
      write(server.clusterPort(), junk());
      // past one window of troupe.pekko-log-bound (10 s), so the count of the first is logged
      Thread.sleep(11_500);
      assertHealthy(server);
    } finally {
      decoder.detachAppender(drops);
      bound.detachAppender(counts);
    }
    List<ILoggingEvent> lines = List.copyOf(drops.list);
    assertTrue(!lines.isEmpty(), "the junk was not decoded: the test no longer shows the flood");
    assertTrue(
        lines.get(0).getFormattedMessage().startsWith("Dropping message"),
        lines.get(0).getFormattedMessage());
    assertTrue(lines.size() <= 2 * 50, lines.size() + " decoder lines in 12 s");
    List<String> summaries =
        counts.list.stream()
            .map(ILoggingEvent::getFormattedMessage)
            .filter(m -> m.contains("org.apache.pekko.remote.artery.Decoder"))
            .toList();
    assertTrue(!summaries.isEmpty(), "no count of the dropped lines was logged");
    assertTrue(summaries.get(0).matches("Dropped \\d{3,} log lines of .*"), summaries.get(0));
  }

  @Test
  void overMutualTlsTheJunkIsRefusedBeforeTheFraming(@TempDir Path dir) throws Exception {
    Path store = dir.resolve("node.p12");
    Process keytool =
        new ProcessBuilder(
                Path.of(System.getProperty("java.home"), "bin", "keytool").toString(),
                "-genkeypair",
                "-keystore",
                store.toString(),
                "-storetype",
                "PKCS12",
                "-storepass",
                "changeit",
                "-alias",
                "node",
                "-keyalg",
                "EC",
                "-dname",
                "CN=troupe-node",
                "-validity",
                "2")
            .redirectErrorStream(true)
            .start();
    assertEquals(0, keytool.waitFor(), new String(keytool.getInputStream().readAllBytes()));
    Config tls =
        ConfigFactory.parseString(
            """
            pekko.remote.artery.transport = tls-tcp
            pekko.remote.artery.ssl.config-ssl-engine {
              key-store = "%1$s"
              trust-store = "%1$s"
              key-store-password = changeit
              key-password = changeit
              trust-store-password = changeit
              require-mutual-authentication = on
            }
            """
                .formatted(store));
    Logger decoder = (Logger) LoggerFactory.getLogger("org.apache.pekko.remote.artery.Decoder");
    ListAppender<ILoggingEvent> drops = new ListAppender<>();
    drops.start();
    try (ChatServer server = ChatServer.start(ChatServer.MODELS, -1, tls)) {
      decoder.addAppender(drops);
      write(server.clusterPort(), junk());
      Thread.sleep(1000);
      assertHealthy(server);
    } finally {
      decoder.detachAppender(drops);
    }
    assertEquals(List.of(), List.copyOf(drops.list));
  }
}
