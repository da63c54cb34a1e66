package dev.troupe.deploy.k8s;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.typesafe.config.ConfigFactory;
import dev.troupe.deploy.LaunchOptions;
import dev.troupe.protocol.cluster.Roles;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@code deploy/k8s}'s overlays rendered by kustomize and checked for what a working deployment
 * needs: pods labelled {@code app} = the Cluster Bootstrap service name, a service account allowed
 * to list pods, probes on named ports the containers declare, a grace period longer than the drain,
 * flags the launcher accepts (parsed by {@link LaunchOptions} itself), no CPU limit, scrape
 * annotations where {@code /metrics} is served, GPUs on the GPU workers, the journal on PostgreSQL
 * in that overlay.
 */
class KubernetesManifestsTest {
  private static final Path K8S = Path.of("k8s").toAbsolutePath();

  /** What the node does after its drain: hand-off and leaving (phases of 10 s each at most). */
  private static final Duration AFTER_DRAIN = Duration.ofSeconds(30);

  @BeforeAll
  static void needsKubectl() {
    Assumptions.assumeTrue(
        RenderedManifests.kubectl() != null,
        "kubectl (its built-in kustomize) is not on the PATH: the manifests are not rendered");
  }

  @ParameterizedTest
  @ValueSource(strings = {"demo", "gpu", "postgres"})
  void everyOverlayIsADeploymentTheNodesCanFormAndDrainIn(String overlay) throws Exception {
    RenderedManifests m = RenderedManifests.render(K8S.resolve("overlays").resolve(overlay));
    List<JsonNode> deployments = m.ofKind("Deployment");
    assertFalse(deployments.isEmpty(), overlay);
    Set<String> podReaders = podReaders(m);
    JsonNode pdb = m.named("PodDisruptionBudget", "troupe");
    assertNotNull(pdb, "a PodDisruptionBudget");
    assertEquals("troupe", pdb.at("/spec/selector/matchLabels/app").asText());
    String models = null;
    boolean gateway = false;
    for (JsonNode d : deployments) {
      String name = d.at("/metadata/name").asText();
      JsonNode pod = d.at("/spec/template");
      String app = pod.at("/metadata/labels/app").asText();
      assertEquals("troupe", app, name + ": label app (the bootstrap service name)");
      assertTrue(
          podReaders.contains(pod.at("/spec/serviceAccountName").asText()),
          name + ": its service account may get, watch and list pods");
      for (JsonNode c : pod.at("/spec/containers")) {
        String where = name + "/" + c.path("name").asText();
        assertEquals(
            "metadata.labels['app']",
            env(c, "PEKKO_CLUSTER_BOOTSTRAP_SERVICE_NAME")
                .at("/valueFrom/fieldRef/fieldPath")
                .asText(),
            where + ": the bootstrap service name is the pod's app label");
        assertEquals("status.podIP", env(c, "POD_IP").at("/valueFrom/fieldRef/fieldPath").asText());
        assertFalse(env(c, "TROUPE_APP_VERSION").path("value").asText().isBlank(), where);
        List<String> args = args(c);
        LaunchOptions o = LaunchOptions.parse(args, null);
        assertEquals(LaunchOptions.KUBERNETES_API, o.discovery(), where);
        assertEquals("$(POD_IP)", o.host(), where + ": the node is reached at its pod IP");
        assertEquals("0.0.0.0", o.bind(), where);
        Set<String> ports = new HashSet<>();
        for (JsonNode p : c.path("ports")) ports.add(p.path("name").asText());
        assertEquals(o.managementPort(), port(c, "management"), where + ": management port");
        assertEquals(o.clusterPort(), port(c, "remoting"), where + ": cluster port");
        // decode replicas on other pods pull KV blocks from a worker's fixed port
        if (o.roles().contains(Roles.WORKER))
          assertEquals(
              env(c, "TROUPE_KV_TRANSFER_PORT").path("value").asInt(-1),
              port(c, "kv-transfer"),
              where + ": a worker's fixed KV transfer port is exposed");
        probe(c, "startupProbe", "/startup", ports, where);
        probe(c, "readinessProbe", "/ready", ports, where);
        probe(c, "livenessProbe", "/alive", ports, where);
        assertTrue(
            c.at("/resources/limits/cpu").isMissingNode(), where + ": no CPU limit on a JVM");
        assertFalse(c.at("/resources/limits/memory").isMissingNode(), where + ": memory limit");
        // Grace period >= unready delay + drain bound + hand-off and leaving.
        Duration drain =
            Duration.ofSeconds(o.shutdownTimeout() < 0 ? 30 : o.shutdownTimeout())
                .plus(unreadyDelay(c))
                .plus(AFTER_DRAIN);
        long grace = pod.at("/spec/terminationGracePeriodSeconds").asLong(30);
        assertTrue(grace >= drain.toSeconds(), where + ": grace " + grace + " s < " + drain);
        String served = o.models() + " " + o.replicas();
        if (models == null) models = served;
        assertEquals(models, served, where + ": every node lists the same models");
        boolean isGateway = o.roles().contains(Roles.GATEWAY);
        assertEquals(
            isGateway,
            "true".equals(pod.at("/metadata/labels/troupe.dev~1gateway").asText()),
            where + ": gateways, and only they, are behind troupe-api");
        if (isGateway) {
          gateway = true;
          JsonNode a = pod.at("/metadata/annotations");
          assertEquals("true", a.path("prometheus.io/scrape").asText(), where);
          assertEquals(
              Integer.toString(port(c, "http")), a.path("prometheus.io/port").asText(), where);
          assertEquals("/metrics", a.path("prometheus.io/path").asText(), where);
          assertTrue(o.metricsWithoutAuth(), where + ": the scraper has no API key");
          assertEquals(o.port(), port(c, "http"), where + ": HTTP port");
        }
        if (o.roles().contains(Roles.WORKER) && overlay.equals("demo"))
          assertEquals("cpu", o.device().device(), where);
        mountsExist(pod, c, m, where);
      }
    }
    assertTrue(gateway, "a gateway serves the API");
    services(m, deployments);
  }

  @ParameterizedTest
  @ValueSource(strings = {"gpu", "postgres"})
  void gpuWorkersGetOneGpuEachAndSpreadOut(String overlay) throws Exception {
    RenderedManifests m = RenderedManifests.render(K8S.resolve("overlays").resolve(overlay));
    JsonNode workers = m.named("Deployment", "troupe-worker");
    assertNotNull(workers);
    JsonNode c = workers.at("/spec/template/spec/containers/0");
    assertEquals(1, c.at("/resources/limits/nvidia.com~1gpu").asInt(), "one GPU per worker pod");
    LaunchOptions o = LaunchOptions.parse(args(c), null);
    assertEquals(List.of(Roles.WORKER), o.roles());
    assertEquals("cuda", o.device().device());
    assertTrue(c.path("image").asText().endsWith("-cuda"), "the CUDA image: " + c.path("image"));
    // One replica per worker pod (per GPU), and sharding waits for all of them before placing.
    int pods = workers.at("/spec/replicas").asInt();
    for (String model : o.models().keySet()) assertEquals(pods, o.replicasOf(model), model);
    assertTrue(
        env(c, "JDK_JAVA_OPTIONS")
            .path("value")
            .asText()
            .contains("-Dpekko.cluster.role.worker.min-nr-of-members=" + pods),
        "allocation waits for every worker");
    JsonNode anti =
        workers.at(
            "/spec/template/spec/affinity/podAntiAffinity/preferredDuringSchedulingIgnoredDuringExecution/0/podAffinityTerm");
    assertEquals("kubernetes.io/hostname", anti.path("topologyKey").asText());
    assertEquals("worker", anti.at("/labelSelector/matchLabels/troupe.dev~1component").asText());
    for (JsonNode d : m.ofKind("Deployment"))
      if (d != workers)
        assertTrue(
            d.at("/spec/template/spec/containers/0/resources/limits/nvidia.com~1gpu")
                .isMissingNode(),
            d.at("/metadata/name") + " needs no GPU");
  }

  @ParameterizedTest
  @ValueSource(strings = {"demo", "gpu"})
  void withoutThePostgresOverlayTheJournalIsH2(String overlay) throws Exception {
    RenderedManifests m = RenderedManifests.render(K8S.resolve("overlays").resolve(overlay));
    for (JsonNode d : m.ofKind("Deployment"))
      assertTrue(
          env(d.at("/spec/template/spec/containers/0"), "TROUPE_DB_BACKEND").isMissingNode());
  }

  @org.junit.jupiter.api.Test
  void thePostgresOverlayPutsEveryNodesJournalOnPostgres() throws Exception {
    RenderedManifests m = RenderedManifests.render(K8S.resolve("overlays").resolve("postgres"));
    for (JsonNode d : m.ofKind("Deployment")) {
      JsonNode c = d.at("/spec/template/spec/containers/0");
      assertEquals("postgres", env(c, "TROUPE_DB_BACKEND").path("value").asText());
      for (String v : List.of("TROUPE_DB_URL", "TROUPE_DB_USER", "TROUPE_DB_PASSWORD"))
        assertEquals("troupe-postgres", env(c, v).at("/valueFrom/secretKeyRef/name").asText(), v);
    }
    assertNull(m.named("PersistentVolumeClaim", "troupe-trainer-data"), "no H2 volume left");
  }

  // ------------------------------------------------------------------ helpers

  /** Service accounts a RoleBinding binds to a Role allowing get, watch and list on pods. */
  private static Set<String> podReaders(RenderedManifests m) {
    Set<String> roles = new HashSet<>();
    for (JsonNode r : m.ofKind("Role"))
      for (JsonNode rule : r.path("rules")) {
        Set<String> verbs = strings(rule.path("verbs"));
        if (strings(rule.path("resources")).contains("pods")
            && strings(rule.path("apiGroups")).contains("")
            && verbs.containsAll(List.of("get", "watch", "list")))
          roles.add(r.at("/metadata/name").asText());
      }
    Set<String> accounts = new HashSet<>();
    for (JsonNode b : m.ofKind("RoleBinding")) {
      if (!b.at("/roleRef/kind").asText().equals("Role")
          || !roles.contains(b.at("/roleRef/name").asText())) continue;
      for (JsonNode s : b.path("subjects"))
        if (s.path("kind").asText().equals("ServiceAccount")
            && m.named("ServiceAccount", s.path("name").asText()) != null)
          accounts.add(s.path("name").asText());
    }
    return accounts;
  }

  /** Each Service selects pods that declare the named port it targets. */
  private static void services(RenderedManifests m, List<JsonNode> deployments) {
    for (JsonNode svc : m.ofKind("Service")) {
      String name = svc.at("/metadata/name").asText();
      int selected = 0;
      for (JsonNode d : deployments) {
        JsonNode labels = d.at("/spec/template/metadata/labels");
        boolean match = true;
        for (var e : svc.at("/spec/selector").properties())
          match &= e.getValue().asText().equals(labels.path(e.getKey()).asText());
        if (!match) continue;
        selected++;
        for (JsonNode p : svc.at("/spec/ports"))
          assertTrue(
              port(d.at("/spec/template/spec/containers/0"), p.path("targetPort").asText()) > 0,
              name + " targets port " + p.path("targetPort") + " of " + d.at("/metadata/name"));
      }
      assertTrue(selected > 0, name + " selects no pod");
    }
    JsonNode headless = m.named("Service", "troupe-management");
    assertEquals("None", headless.at("/spec/clusterIP").asText());
    assertTrue(headless.at("/spec/publishNotReadyAddresses").asBoolean());
    assertNotNull(m.named("Service", "troupe-api"));
  }

  /** A container's volume mounts name volumes of its pod, and claimed volumes exist. */
  private static void mountsExist(JsonNode pod, JsonNode c, RenderedManifests m, String where) {
    Map<String, JsonNode> volumes = new java.util.HashMap<>();
    for (JsonNode v : pod.at("/spec/volumes")) volumes.put(v.path("name").asText(), v);
    for (JsonNode mount : c.path("volumeMounts")) {
      JsonNode v = volumes.get(mount.path("name").asText());
      assertNotNull(v, where + ": volume " + mount.path("name"));
      JsonNode claim = v.at("/persistentVolumeClaim/claimName");
      if (!claim.isMissingNode())
        assertNotNull(m.named("PersistentVolumeClaim", claim.asText()), where + ": " + claim);
    }
  }

  private static void probe(JsonNode c, String kind, String path, Set<String> ports, String where) {
    JsonNode get = c.path(kind).path("httpGet");
    assertEquals(path, get.path("path").asText(), where + " " + kind);
    assertEquals("management", get.path("port").asText(), where + " " + kind + " on management");
    assertTrue(ports.contains(get.path("port").asText()), where + ": " + kind + "'s port declared");
  }

  private static int port(JsonNode c, String name) {
    for (JsonNode p : c.path("ports"))
      if (p.path("name").asText().equals(name)) return p.path("containerPort").asInt();
    return -1;
  }

  private static JsonNode env(JsonNode c, String name) {
    for (JsonNode e : c.path("env")) if (e.path("name").asText().equals(name)) return e;
    return com.fasterxml.jackson.databind.node.MissingNode.getInstance();
  }

  private static List<String> args(JsonNode c) {
    List<String> out = new ArrayList<>();
    for (JsonNode a : c.path("args")) out.add(a.asText());
    return out;
  }

  /** {@code -Dtroupe.node.drain.unready-delay=...} from JDK_JAVA_OPTIONS, else the default. */
  private static Duration unreadyDelay(JsonNode c) {
    Matcher d =
        Pattern.compile("-Dtroupe\\.node\\.drain\\.unready-delay=(\\S+)")
            .matcher(env(c, "JDK_JAVA_OPTIONS").path("value").asText());
    String value = d.find() ? d.group(1) : "0s";
    return ConfigFactory.parseString("d = " + value).getDuration("d");
  }

  private static Set<String> strings(JsonNode array) {
    Set<String> out = new HashSet<>();
    for (JsonNode n : array) out.add(n.asText());
    return out;
  }
}
