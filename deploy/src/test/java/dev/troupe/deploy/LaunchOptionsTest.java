package dev.troupe.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.Config;
import dev.troupe.protocol.cluster.ServedModels;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LaunchOptionsTest {

  @Test
  void defaultsServeTheDemoModelWithAllRoles() {
    LaunchOptions o = LaunchOptions.parse(List.of("serve"), null);
    assertEquals(8000, o.port());
    assertEquals(Map.of("demo", "demo"), o.models());
    assertEquals(List.of("gateway", "worker", "trainer"), o.roles());
    assertEquals(List.of(), o.seedNodes());
    assertEquals(List.of(), o.apiKeys());
    assertEquals("127.0.0.1", o.bind(), "listens where other nodes reach it: loopback");
    assertEquals(
        "127.0.0.1",
        TroupeNode.config(o, List.of())
            .withFallback(com.typesafe.config.ConfigFactory.load())
            .getString("troupe.gateway.host"));
    assertEquals(false, o.metricsWithoutAuth());
  }

  @Test
  void bindAndMetricsFlags() {
    LaunchOptions o =
        LaunchOptions.parse(
            List.of("--host", "10.0.0.3", "--bind", "0.0.0.0", "--metrics-without-auth"), null);
    assertEquals("10.0.0.3", o.host());
    assertEquals("0.0.0.0", o.bind());
    assertTrue(o.metricsWithoutAuth());
    var config = TroupeNode.config(o, List.of());
    assertEquals("0.0.0.0", config.getString("troupe.gateway.host"));
    assertEquals("0.0.0.0", config.getString("pekko.management.http.bind-hostname"));
    assertEquals("0.0.0.0", config.getString("pekko.remote.artery.bind.hostname"));
    assertEquals("10.0.0.3", config.getString("pekko.remote.artery.canonical.hostname"));
    assertTrue(config.getBoolean("troupe.gateway.metrics-without-auth"));
    assertEquals(
        "10.0.0.3",
        LaunchOptions.parse(List.of("--host", "10.0.0.3"), null).bind(),
        "without --bind the node listens on --host");
    assertEquals(
        false,
        LaunchOptions.parse(List.of("--metrics-without-auth=false"), null).metricsWithoutAuth());
  }

  @Test
  void discoveryAndShutdownFlags() {
    LaunchOptions plain = LaunchOptions.parse(List.of(), null);
    assertEquals("none", plain.discovery());
    assertEquals(-1, plain.shutdownTimeout(), "the config's drain timeout");
    LaunchOptions k8s =
        LaunchOptions.parse(
            List.of(
                "--discovery=kubernetes-api",
                "--required-contact-points",
                "3",
                "--shutdown-timeout",
                "45"),
            null);
    assertEquals("kubernetes-api", k8s.discovery());
    assertEquals(3, k8s.requiredContactPoints());
    assertEquals(45, k8s.shutdownTimeout());
    Config c = TroupeNode.config(k8s, List.of());
    String discovery = "pekko.management.cluster.bootstrap.contact-point-discovery.";
    assertEquals("kubernetes-api", c.getString(discovery + "discovery-method"));
    assertEquals(3, c.getInt(discovery + "required-contact-point-nr"));
    assertTrue(c.getBoolean("pekko.discovery.kubernetes-api.use-raw-ip"));
    assertFalse(TroupeNode.config(plain, List.of()).hasPath(discovery + "discovery-method"));
    for (List<String> bad :
        List.of(
            List.of("--discovery", "dns"),
            List.of("--discovery", "kubernetes-api", "--seed-nodes", "h:1"),
            List.of("--discovery", "kubernetes-api", "--management-port", "-1"),
            List.of("--required-contact-points", "0"),
            List.of("--shutdown-timeout", "-5")))
      assertThrows(IllegalArgumentException.class, () -> LaunchOptions.parse(bad, null), "" + bad);
  }

  @Test
  void prefixCachingIsOnUnlessTurnedOffAsInVllm() {
    LaunchOptions on = LaunchOptions.parse(List.of(), null);
    assertTrue(on.enablePrefixCaching());
    assertTrue(
        TroupeNode.config(on, List.of()).getBoolean("troupe.worker.engine.enable-prefix-caching"));
    LaunchOptions off = LaunchOptions.parse(List.of("--no-enable-prefix-caching"), null);
    assertEquals(false, off.enablePrefixCaching());
    assertEquals(
        false,
        TroupeNode.config(off, List.of()).getBoolean("troupe.worker.engine.enable-prefix-caching"));
    assertEquals(
        false,
        LaunchOptions.parse(List.of("--enable-prefix-caching=false"), null).enablePrefixCaching());
  }

  @Test
  void everyFlag() {
    LaunchOptions o =
        LaunchOptions.parse(
            List.of(
                "serve",
                "--port",
                "9000",
                "--model",
                "qwen=/models/qwen",
                "--model=small=demo",
                "--replicas",
                "qwen=3",
                "--scheduling-policy",
                "qwen=priority",
                "--api-key",
                "k1",
                "--api-key=k2",
                "--roles",
                "gateway,worker",
                "--seed-nodes",
                "10.0.0.1:25520,10.0.0.2:25520",
                "--cluster-port",
                "0",
                "--management-port",
                "-1",
                "--data-dir",
                "/tmp/x",
                "--host",
                "10.0.0.3",
                "--dtype",
                "bfloat16"),
            "k3, k4");
    assertEquals(9000, o.port());
    assertEquals(List.of("qwen", "small"), new ArrayList<>(o.models().keySet()), "flag order kept");
    assertEquals(3, o.replicasOf("qwen"));
    assertEquals(1, o.replicasOf("small"));
    assertEquals(List.of("k1", "k2", "k3", "k4"), o.apiKeys());
    assertEquals(List.of("gateway", "worker"), o.roles());
    assertEquals(List.of("10.0.0.1:25520", "10.0.0.2:25520"), o.seedNodes());
    assertEquals(Path.of("/tmp/x"), o.dataDir());
    // The flags become the config the node reads.
    ServedModels models =
        ServedModels.fromConfig(
            TroupeNode.config(o, o.apiKeys())
                .withFallback(com.typesafe.config.ConfigFactory.load()));
    assertEquals("qwen", models.defaultModel().orElseThrow().name());
    assertEquals(
        List.of("qwen#0", "qwen#1", "qwen#2"), models.find("qwen").orElseThrow().entityIds());
    assertTrue(models.find("qwen").orElseThrow().usesPriority());
    assertEquals("fcfs", models.find("small").orElseThrow().schedulingPolicy());
    assertEquals("bfloat16", o.device().dtype());
    assertEquals("auto", LaunchOptions.parse(List.of(), null).device().dtype());
    assertEquals(
        "float16", LaunchOptions.parse(List.of("--dtype", "float16"), null).device().dtype());
  }

  @Test
  void badFlagsNameTheProblem() {
    assertTrue(
        assertThrows(
                IllegalArgumentException.class,
                () -> LaunchOptions.parse(List.of("--port", "x"), null))
            .getMessage()
            .contains("--port"));
    assertThrows(
        IllegalArgumentException.class,
        () -> LaunchOptions.parse(List.of("--model", "nodir"), null));
    assertThrows(
        IllegalArgumentException.class,
        () -> LaunchOptions.parse(List.of("--replicas", "x=2"), null));
    assertThrows(
        IllegalArgumentException.class,
        () -> LaunchOptions.parse(List.of("--roles", "chef"), null));
    assertThrows(
        IllegalArgumentException.class,
        () -> LaunchOptions.parse(List.of("--seed-nodes", "nohost"), null));
    assertThrows(
        IllegalArgumentException.class,
        () -> LaunchOptions.parse(List.of("--frobnicate", "1"), null));
    assertTrue(
        assertThrows(
                IllegalArgumentException.class,
                () -> LaunchOptions.parse(List.of("--dtype", "int8"), null))
            .getMessage()
            .contains("--dtype must be one of auto, half, float16, bfloat16, float, float32"));
  }

  @Test
  void aKeyIsGeneratedOnceAndKept(@TempDir Path dir) throws Exception {
    List<String> announced = new ArrayList<>();
    List<String> first = ApiKeys.resolve(List.of(), dir, announced::add);
    assertEquals(1, announced.size(), "printed once");
    assertTrue(first.get(0).startsWith("sk-troupe-"));
    assertEquals(first.get(0), Files.readString(dir.resolve("api-key")).trim());
    List<String> second = ApiKeys.resolve(List.of(), dir, announced::add);
    assertEquals(first, second);
    assertEquals(1, announced.size(), "not printed again");
    assertEquals(List.of("mine"), ApiKeys.resolve(List.of("mine"), dir, announced::add));
  }
}
