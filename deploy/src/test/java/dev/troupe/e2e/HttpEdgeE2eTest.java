package dev.troupe.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.InputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * The node's HTTP servers against one unauthenticated connection (issue 21): 1,000 pipelined {@code
 * GET /health} in one write stopped the JVM (Pekko HTTP's parser recursed once per request of a
 * network read until the stack overflowed), on the API port and on Pekko Management's alike; the
 * management port served the cluster's members and shards to anyone.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class HttpEdgeE2eTest {
  private ChatServer server;
  private final HttpClient http =
      HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

  @BeforeAll
  void start() throws Exception {
    server = ChatServer.start(ChatServer.MODELS, 0);
  }

  @AfterAll
  void stop() throws Exception {
    if (server != null) server.close();
  }

  /**
   * Writes {@code count} copies of {@code request} in one write on one socket and counts the 200s
   * that come back before the server closes or {@code count} arrived.
   */
  private static int pipelined(URI base, String request, int count) throws Exception {
    byte[] all = request.repeat(count).getBytes(StandardCharsets.US_ASCII);
    try (Socket s = new Socket(base.getHost(), base.getPort())) {
      s.setSoTimeout(60_000);
      s.getOutputStream().write(all);
      s.getOutputStream().flush();
      InputStream in = s.getInputStream();
      byte[] buf = new byte[65536];
      String needle = "HTTP/1.1 200 OK";
      StringBuilder tail = new StringBuilder();
      int seen = 0;
      while (seen < count) {
        int n = in.read(buf);
        if (n < 0) break;
        tail.append(new String(buf, 0, n, StandardCharsets.US_ASCII));
        for (int i = tail.indexOf(needle); i >= 0; i = tail.indexOf(needle)) {
          seen++;
          tail.delete(0, i + needle.length());
        }
      }
      return seen;
    }
  }

  private int status(String url, boolean withKey) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url));
    if (withKey) b.header("Authorization", "Bearer " + ChatServer.KEY);
    return http.send(b.build(), HttpResponse.BodyHandlers.discarding()).statusCode();
  }

  private void assertServing() throws Exception {
    assertEquals(200, status(server.baseUrl() + "/health", false));
    assertEquals(200, status(server.baseUrl() + "/v1/models", true));
  }

  @Test
  void aThousandPipelinedHealthChecksOnOneConnectionAreAllAnswered() throws Exception {
    URI api = URI.create(server.baseUrl());
    assertEquals(1000, pipelined(api, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n", 1000));
    // the shortest requests, many more than one read holds
    assertEquals(20_000, pipelined(api, "GET /health HTTP/1.1\r\nHost:x\r\n\r\n", 20_000));
    assertServing();
  }

  @Test
  void theManagementPortSurvivesThemToo() throws Exception {
    URI management = URI.create(server.managementUrl());
    assertEquals(1000, pipelined(management, "GET /alive HTTP/1.1\r\nHost: x\r\n\r\n", 1000));
    assertServing();
  }

  @Test
  void clusterInformationNeedsTheKeyAndProbesDoNot() throws Exception {
    String m = server.managementUrl().replaceAll("/$", "");
    for (String path : new String[] {"/cluster/members", "/cluster/shards/ModelWorker"}) {
      assertEquals(401, status(m + path, false), path);
      assertEquals(200, status(m + path, true), path);
    }
    assertEquals(200, status(m + "/alive", false));
    assertEquals(200, status(m + "/ready", false));
    assertEquals(200, status(m + "/startup", false));
    HttpResponse<String> members =
        http.send(
            HttpRequest.newBuilder(URI.create(m + "/cluster/members"))
                .header("Authorization", "Bearer " + ChatServer.KEY)
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertTrue(members.body().contains("\"members\""), members.body());
  }
}
