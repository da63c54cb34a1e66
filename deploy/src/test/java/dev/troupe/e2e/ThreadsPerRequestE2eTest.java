package dev.troupe.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ForkJoinPool;
import org.junit.jupiter.api.Test;

/**
 * Generation requests start no thread of their own. With one or two cores the JDK's common pool has
 * parallelism 1, and then every stage run on it starts a new thread: chaining directly on a stage
 * Pekko's Java API returns does that (its non-async methods run on the common pool), which cost
 * each request several threads (135 for these 20 requests before the gateway completed those stages
 * on its dispatcher, {@code dev.troupe.gateway.http.Stages}). The module's tests run with the
 * common pool's parallelism at 1 (deploy/pom.xml), as on such a machine, whatever the cores here.
 */
class ThreadsPerRequestE2eTest {
  /**
   * Threads the server may still start lazily after the warm-up requests: its dispatchers'
   * fork-join pools add and retire workers on demand (up to their parallelism), and the gateway's
   * tokenizing pool starts one per core until it has them all.
   */
  private static final int LAZY_POOL_THREADS = 8;

  @Test
  void chatAndCompletionRequestsStartNoThreadEach() throws Exception {
    assertStartsNoThreadEach(ThreadsPerRequestE2eTest::send, "chat/completion");
  }

  /**
   * The admin pages too: {@code /v1/cluster} asks the receptionist, every node's reporter (which
   * asks its serving replicas) and the shard coordinators; {@code /metrics} gathers the same node
   * reports for its {@code troupe:} families. Before they completed those stages on a dispatcher,
   * 20 of these requests started 150 threads.
   */
  @Test
  void clusterAndMetricsRequestsStartNoThreadEach() throws Exception {
    assertStartsNoThreadEach(ThreadsPerRequestE2eTest::admin, "/v1/cluster and /metrics");
  }

  private interface Request {
    void send(HttpClient http, ChatServer server, int i) throws Exception;
  }

  private static void assertStartsNoThreadEach(Request request, String what) throws Exception {
    assertEquals(1, ForkJoinPool.getCommonPoolParallelism(), "see deploy/pom.xml");
    ExecutorService clientThread = Executors.newSingleThreadExecutor();
    try (ChatServer server = ChatServer.start()) {
      HttpClient http =
          HttpClient.newBuilder()
              .version(HttpClient.Version.HTTP_1_1)
              .executor(clientThread)
              .build();
      for (int i = 0; i < 8; i++) request.send(http, server, i); // every kind, twice: pools warm up
      ThreadMXBean threads = ManagementFactory.getThreadMXBean();
      Set<String> before = names();
      long started = threads.getTotalStartedThreadCount();

      for (int i = 0; i < 20; i++) request.send(http, server, i);

      long more = threads.getTotalStartedThreadCount() - started;
      Set<String> now = names();
      now.removeAll(before);
      assertTrue(
          more <= LAZY_POOL_THREADS,
          more
              + " threads started during 20 "
              + what
              + " requests (still alive: "
              + now
              + "); record jdk.ThreadStart with stack traces in JFR to see where");
    } finally {
      clientThread.shutdownNow();
    }
  }

  /** {@code GET /v1/cluster} and {@code GET /metrics}, in turn. */
  private static void admin(HttpClient http, ChatServer server, int i) throws Exception {
    boolean cluster = i % 2 == 0;
    HttpResponse<String> r =
        http.send(
            HttpRequest.newBuilder(
                    URI.create(server.baseUrl() + (cluster ? "/v1/cluster" : "/metrics")))
                .header("Authorization", "Bearer " + ChatServer.KEY)
                .GET()
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertEquals(200, r.statusCode(), r.body());
    assertTrue(r.body().contains(cluster ? "\"members\"" : "troupe:cluster_members"), r.body());
  }

  /** Chat and completions (two prompts, n=2, echoed logprobs), each streamed and not, in turn. */
  private static void send(HttpClient http, ChatServer server, int i) throws Exception {
    boolean stream = i % 2 == 0;
    boolean chat = i % 4 < 2;
    String body =
        chat
            ? """
              {"model":"demo","messages":[{"role":"user","content":"Hi"}],"max_tokens":4,
               "stream":%s}"""
                .formatted(stream)
            : """
              {"model":"demo","prompt":["Hi","Ho"],"n":2,"echo":true,"logprobs":1,
               "max_tokens":4,"stream":%s}"""
                .formatted(stream);
    HttpResponse<String> r =
        http.send(
            HttpRequest.newBuilder(
                    URI.create(
                        server.baseUrl() + (chat ? "/v1/chat/completions" : "/v1/completions")))
                .header("Content-Type", "application/json")
                .header("Authorization", "Bearer " + ChatServer.KEY)
                .POST(HttpRequest.BodyPublishers.ofString(body))
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertEquals(200, r.statusCode(), r.body());
    assertTrue(r.body().contains(stream ? "[DONE]" : "\"usage\""), r.body());
  }

  private static Set<String> names() {
    Set<String> out = new HashSet<>();
    for (Thread t : Thread.getAllStackTraces().keySet()) out.add(t.getName());
    return out;
  }
}
