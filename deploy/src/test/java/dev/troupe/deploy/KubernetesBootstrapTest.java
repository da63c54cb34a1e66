package dev.troupe.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.protocol.Json;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Cluster formation as on Kubernetes, with the real discovery code: the launcher ({@link Main}) in
 * three JVMs on 127.0.0.2–.4 — a gateway and two workers, each with {@code --discovery
 * kubernetes-api} — finds its peers through Pekko's Kubernetes API discovery, which reads the pod
 * list over HTTPS from {@link KubernetesApiFake} (token, CA and namespace files as a service
 * account mounts them). The cluster forms through Cluster Bootstrap; each node's {@code /ready}
 * turns 200 only once the model is loaded (the gateway's: once a loaded replica is reachable).
 * SIGTERM to the worker holding the demo model's replica while a stream runs on it: readiness fails
 * at once, the stream completes token for token (finished within the drain bound or resumed on the
 * other worker), the node leaves and exits with status 0, and new requests are served. A fourth
 * node whose pod appears later is discovered and joins.
 */
class KubernetesBootstrapTest {
  private static final Duration WAIT = Duration.ofMinutes(3);
  private static final String KEY = "sk-k8s";
  private static final int TOKENS = 400;

  @TempDir Path dir;
  private final Map<String, Process> nodes = new LinkedHashMap<>();
  private final HttpClient http =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
  private KubernetesApiFake api;
  private int management;

  @AfterEach
  void stopAll() throws Exception {
    for (Process p : nodes.values()) p.destroyForcibly();
    for (Process p : nodes.values()) p.waitFor(30, TimeUnit.SECONDS);
    if (api != null) api.close();
  }

  @Test
  void nodesDiscoverEachOtherDrainOnSigtermAndLaterNodesJoin() throws Exception {
    management = freePortOnAll("127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5");
    api = new KubernetesApiFake(dir.resolve("serviceaccount"), management);
    api.addPod("troupe-gateway", "127.0.0.2");
    api.addPod("troupe-worker-a", "127.0.0.3");
    api.addPod("troupe-worker-b", "127.0.0.4");
    start("gateway", "127.0.0.2", "gateway");
    start("a", "127.0.0.3", "worker");
    start("b", "127.0.0.4", "worker");

    // Readiness: each node's first 200, and whether the model had loaded by then.
    Map<String, Boolean> loadedWhenReady = new LinkedHashMap<>();
    await(
        "all three nodes ready",
        () -> {
          for (var e :
              Map.of("gateway", "127.0.0.2", "a", "127.0.0.3", "b", "127.0.0.4").entrySet()) {
            if (loadedWhenReady.containsKey(e.getKey())) continue;
            if (status(e.getValue(), "/ready") == 200)
              loadedWhenReady.put(
                  e.getKey(),
                  e.getKey().equals("gateway")
                      ? modelLoaded("a") || modelLoaded("b")
                      : modelLoaded(e.getKey()));
          }
          return loadedWhenReady.size() == 3;
        });
    assertTrue(api.podListings() > 0, "the pods were listed through the Kubernetes API");
    assertEquals(List.of("127.0.0.2", "127.0.0.3", "127.0.0.4"), upMembers());
    String host = hasReplica("127.0.0.3") ? "a" : "b";
    String hostIp = host.equals("a") ? "127.0.0.3" : "127.0.0.4";
    String other = host.equals("a") ? "b" : "a";
    assertTrue(loadedWhenReady.get(host), "the replica's worker was ready before its model loaded");
    assertTrue(loadedWhenReady.get("gateway"), "the gateway was ready before any model loaded");
    assertEquals(200, status("127.0.0.2", "/startup"));
    assertEquals(200, status("127.0.0.2", "/health", gatewayPort()));

    ChatClient client = new ChatClient("127.0.0.2", gatewayPort(), KEY);
    List<Integer> expected = ChatClient.tokenIds(client.whole(TOKENS).get(2, TimeUnit.MINUTES));
    assertEquals(TOKENS, expected.size());

    AtomicInteger seen = new AtomicInteger();
    var stream = client.stream(TOKENS, seen);
    await("the stream has begun", () -> seen.get() >= 8);
    Process victim = nodes.get(host);
    victim.destroy(); // SIGTERM
    // Pekko Management answers a failing check with 500 ("Not Healthy"); any status from 200 to
    // 399 would count as ready for a Kubernetes probe.
    boolean unready = false;
    while (victim.isAlive() && !unready) unready = status(hostIp, "/ready") == 500;
    assertTrue(unready, "readiness failed while the node drained");

    assertEquals(expected, stream.get(2, TimeUnit.MINUTES), "the stream, token for token");
    assertTrue(victim.waitFor(2, TimeUnit.MINUTES), "the drained node exits");
    assertEquals(0, victim.exitValue(), log(host));
    assertTrue(log(host).contains("draining"), log(host));
    api.deletePod("troupe-worker-" + host);
    await(
        "the node has left",
        () -> {
          List<String> up = upMembers();
          return up != null && !up.contains(hostIp);
        });
    assertEquals(8, ChatClient.tokenIds(client.whole(8).get(2, TimeUnit.MINUTES)).size());
    await("the replica serves from the other worker", () -> modelLoaded(other));

    // A pod that appears later is discovered and joins the running cluster.
    api.addPod("troupe-worker-c", "127.0.0.5");
    start("c", "127.0.0.5", "worker");
    await(
        "the new node joined",
        () -> {
          List<String> up = upMembers();
          return up != null && up.contains("127.0.0.5");
        });
    await("the new node is ready", () -> status("127.0.0.5", "/ready") == 200);
  }

  /** Starts the launcher as a pod would run it (its own IP, the management port all pods share). */
  private void start(String name, String ip, String roles) throws Exception {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    List<String> cmd = new ArrayList<>(List.of(java, "-Xmx640m"));
    cmd.addAll(
        List.of(
            "--add-modules",
            "jdk.incubator.vector",
            "--add-opens",
            "java.base/java.nio=ALL-UNNAMED",
            "--add-opens",
            "java.base/sun.nio.ch=ALL-UNNAMED",
            "-cp",
            System.getProperty("java.class.path")));
    String discovery = "-Dpekko.discovery.kubernetes-api.";
    String bootstrap = "-Dpekko.management.cluster.bootstrap.";
    cmd.addAll(
        List.of(
            discovery + "api-ca-path=" + api.caFile(),
            discovery + "api-token-path=" + api.tokenFile(),
            discovery + "pod-namespace-path=" + api.namespaceFile(),
            bootstrap + "contact-point-discovery.stable-margin=1s",
            bootstrap + "contact-point-discovery.interval=500ms",
            bootstrap + "contact-point.probe-interval=500ms",
            "-Dpekko.cluster.gossip-interval=300ms",
            "-Dpekko.cluster.leader-actions-interval=300ms",
            "-Dpekko.cluster.sharding.retry-interval=300ms",
            "-Dpekko.cluster.sharding.rebalance-interval=1s",
            "-Dpekko.cluster.sharding.entity-restart-backoff=500ms",
            "-Dtroupe.worker.engine.num-blocks=96",
            "-Dtroupe.worker.metrics-log-interval=0s",
            Main.class.getName(),
            "serve",
            "--roles",
            roles,
            "--host",
            ip,
            "--port",
            "0",
            "--cluster-port",
            "0",
            "--management-port",
            Integer.toString(management),
            "--discovery",
            "kubernetes-api",
            "--required-contact-points",
            "3",
            "--shutdown-timeout",
            "2",
            "--api-key",
            KEY,
            "--data-dir",
            dir.resolve(name).toString()));
    ProcessBuilder pb =
        new ProcessBuilder(cmd)
            .redirectErrorStream(true)
            .redirectOutput(dir.resolve(name + ".log").toFile());
    Map<String, String> env = pb.environment();
    env.put("KUBERNETES_SERVICE_HOST", "127.0.0.1");
    env.put("KUBERNETES_SERVICE_PORT", Integer.toString(api.port()));
    env.put("PEKKO_CLUSTER_BOOTSTRAP_SERVICE_NAME", KubernetesApiFake.APP);
    env.put("TROUPE_APP_VERSION", "1.0.0");
    nodes.put(name, pb.start());
  }

  private String log(String name) throws Exception {
    return Files.readString(dir.resolve(name + ".log"));
  }

  private boolean modelLoaded(String name) throws Exception {
    return log(name).contains("demo#0 loaded in");
  }

  /**
   * The gateway's HTTP port, from its "serving" line. The launcher prints that line when it next
   * polls the node's readiness (every 500 ms), so it may follow {@code /ready}'s first 200: wait.
   */
  private int gatewayPort() throws Exception {
    Pattern serving = Pattern.compile("on http://localhost:(\\d+)/v1");
    await("the gateway's serving line", () -> serving.matcher(log("gateway")).find());
    Matcher m = serving.matcher(log("gateway"));
    assertTrue(m.find(), log("gateway"));
    return Integer.parseInt(m.group(1));
  }

  /**
   * The IPs of the Up members, as the gateway's management API lists them, in order; null when the
   * gateway did not answer in time. Any answer but 200 fails: read as "no members", a refusal (the
   * cluster routes need the key) would pass "the node has left" without it having left.
   */
  private List<String> upMembers() throws Exception {
    HttpResponse<String> r = clusterRoute("127.0.0.2", "/cluster/members");
    if (r == null) return null;
    List<String> ips = new ArrayList<>();
    for (JsonNode m : Json.mapper().readTree(r.body()).path("members"))
      if (m.path("status").asText().equals("Up")) {
        Matcher ip = Pattern.compile("@([0-9.]+):").matcher(m.path("node").asText());
        if (ip.find()) ips.add(ip.group(1));
      }
    ips.sort(null);
    return ips;
  }

  /** True when the worker at {@code ip} hosts a model replica now. */
  private boolean hasReplica(String ip) throws Exception {
    HttpResponse<String> r = clusterRoute(ip, "/cluster/shards/ModelWorker");
    assertTrue(r != null, ip + " did not answer GET /cluster/shards/ModelWorker");
    int entities = 0;
    for (JsonNode region : Json.mapper().readTree(r.body()).path("regions"))
      entities += region.path("numEntities").asInt();
    return entities > 0;
  }

  /**
   * {@code GET path} on a cluster route of the management port, with the API key (those routes
   * refuse callers without it, unlike the probes); null when nothing answers, and a failure for any
   * status but 200.
   */
  private HttpResponse<String> clusterRoute(String ip, String path) {
    HttpResponse<String> r = get(ip, management, path, KEY);
    if (r != null) assertEquals(200, r.statusCode(), "GET " + path + " on " + ip + ": " + r.body());
    return r;
  }

  private int status(String ip, String path) {
    return status(ip, path, management);
  }

  /** The HTTP status of {@code GET path}, or -1 when nothing answers. */
  private int status(String ip, String path, int port) {
    HttpResponse<String> r = get(ip, port, path, null);
    return r == null ? -1 : r.statusCode();
  }

  /**
   * {@code GET path}, with {@code key} as the bearer token unless null; null when nothing answers.
   */
  private HttpResponse<String> get(String ip, int port, String path, String key) {
    HttpRequest.Builder request =
        HttpRequest.newBuilder(URI.create("http://" + ip + ":" + port + path))
            .timeout(Duration.ofSeconds(5));
    if (key != null) request.header("Authorization", "Bearer " + key);
    try {
      return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
    } catch (java.io.IOException e) {
      return null;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private interface Condition {
    boolean holds() throws Exception;
  }

  /** Polls {@code condition} until it holds; fails naming {@code what} if it has not in time. */
  private void await(String what, Condition condition) throws Exception {
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (!condition.holds()) {
      for (var e : nodes.entrySet())
        if (!e.getValue().isAlive())
          assertEquals(0, e.getValue().exitValue(), e.getKey() + " died: " + log(e.getKey()));
      assertTrue(System.nanoTime() < deadline, "timed out waiting until " + what);
      Thread.sleep(200);
    }
  }

  /** A port free on every one of {@code ips} (each node binds its own IP with the same port). */
  private static int freePortOnAll(String... ips) throws Exception {
    for (int attempt = 0; attempt < 50; attempt++) {
      int port;
      try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getByName(ips[0]))) {
        port = s.getLocalPort();
      }
      boolean free = true;
      for (String ip : ips) {
        try (ServerSocket s = new ServerSocket()) {
          s.bind(new InetSocketAddress(ip, port));
        } catch (java.io.IOException e) {
          free = false;
        }
      }
      if (free) return port;
    }
    throw new IllegalStateException("no port free on all of " + List.of(ips));
  }
}
