package dev.troupe.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
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
  void kvRolesPerModelReachTheWorkersConfig() {
    LaunchOptions o =
        LaunchOptions.parse(
            List.of(
                "--model",
                "a=demo",
                "--model",
                "b=demo",
                "--model",
                "c=demo",
                "--kv-role",
                "a=prefill",
                "--kv-role",
                "DECODE",
                "--kv-role=c=both"),
            null);
    dev.troupe.worker.KvRoles roles =
        dev.troupe.worker.KvRoles.fromConfig(
            TroupeNode.config(o, List.of()).withFallback(com.typesafe.config.ConfigFactory.load()));
    assertEquals(dev.troupe.protocol.cluster.KvRole.PREFILL, roles.of("a"));
    assertEquals(dev.troupe.protocol.cluster.KvRole.DECODE, roles.of("b"), "--kv-role R: all");
    assertEquals(dev.troupe.protocol.cluster.KvRole.BOTH, roles.of("c"));
    // Without the flag: both.
    assertEquals(
        dev.troupe.protocol.cluster.KvRole.BOTH,
        dev.troupe.worker.KvRoles.fromConfig(
                TroupeNode.config(LaunchOptions.parse(List.of(), null), List.of())
                    .withFallback(com.typesafe.config.ConfigFactory.load()))
            .of("demo"));
    IllegalArgumentException bad =
        org.junit.jupiter.api.Assertions.assertThrows(
            IllegalArgumentException.class,
            () -> LaunchOptions.parse(List.of("--kv-role", "demo=producer"), null));
    assertTrue(bad.getMessage().contains("prefill, decode or both"), bad.getMessage());
    IllegalArgumentException unknown =
        org.junit.jupiter.api.Assertions.assertThrows(
            IllegalArgumentException.class,
            () -> LaunchOptions.parse(List.of("--kv-role", "other=prefill"), null));
    assertTrue(unknown.getMessage().contains("unknown model other"), unknown.getMessage());
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
        () -> LaunchOptions.parse(List.of("--replicas", "x=2"), null));
    assertThrows(
        IllegalArgumentException.class,
        () -> LaunchOptions.parse(List.of("--roles", "chef"), null));
    assertThrows(
        IllegalArgumentException.class,
        () -> LaunchOptions.parse(List.of("--seed-nodes", "nohost"), null));
    assertEquals(
        "unknown flag --frobnicate",
        assertThrows(
                IllegalArgumentException.class,
                () -> LaunchOptions.parse(List.of("--frobnicate", "1"), null))
            .getMessage());
    assertTrue(
        assertThrows(
                IllegalArgumentException.class,
                () -> LaunchOptions.parse(List.of("--dtype", "int8"), null))
            .getMessage()
            .contains("--dtype must be one of auto, half, float16, bfloat16, float, float32"));
  }

  @Test
  void anUnknownFlagIsNamedWhereverItIs() {
    // Before: the last argument, taken for a flag wanting a value, said "--bogus needs a value".
    for (List<String> args :
        List.of(List.of("--bogus"), List.of("serve", "--port", "9000", "--bogus")))
      assertEquals(
          "unknown flag --bogus",
          assertThrows(IllegalArgumentException.class, () -> LaunchOptions.parse(args, null))
              .getMessage());
    assertEquals(
        "--port needs a value",
        assertThrows(
                IllegalArgumentException.class, () -> LaunchOptions.parse(List.of("--port"), null))
            .getMessage());
  }

  @Test
  void helpAndVersionAreInformationNotErrors() {
    String help =
        assertThrows(
                LaunchOptions.InfoRequested.class,
                () -> LaunchOptions.parse(List.of("serve", "--port", "1", "--help"), null))
            .getMessage();
    assertTrue(help.startsWith("Usage: troupe serve"), help);
    for (String flag :
        List.of(
            "--max-model-len",
            "--served-model-name",
            "--chat-template",
            "--max-num-seqs",
            "--max-num-batched-tokens",
            "--version")) assertTrue(help.contains(flag), flag + " in --help");
    String version =
        assertThrows(
                LaunchOptions.InfoRequested.class,
                () -> LaunchOptions.parse(List.of("--version"), null))
            .getMessage();
    assertEquals(dev.troupe.gateway.routes.VersionRoute.buildVersion(), version);
    assertTrue(version.matches("\\d+\\.\\d+\\.\\d+.*"), version);
  }

  @Test
  void vllmEngineFlagsBecomeTheEngineConfig() {
    LaunchOptions o =
        LaunchOptions.parse(
            List.of(
                "--max-model-len", "1024", "--max-num-seqs=8", "--max-num-batched-tokens", "512"),
            null);
    var config = TroupeNode.config(o, List.of()).withFallback(ConfigFactory.load());
    assertEquals(1024, config.getInt("troupe.worker.engine.max-model-len"));
    assertEquals(8, config.getInt("troupe.worker.engine.max-num-seqs"));
    assertEquals(512, config.getInt("troupe.worker.engine.max-num-batched-tokens"));
    var defaults =
        TroupeNode.config(LaunchOptions.parse(List.of(), null), List.of())
            .withFallback(ConfigFactory.load());
    assertEquals(0, defaults.getInt("troupe.worker.engine.max-model-len"), "the model's");
    assertEquals(32, defaults.getInt("troupe.worker.engine.max-num-seqs"));
    for (String flag : List.of("--max-model-len", "--max-num-seqs", "--max-num-batched-tokens"))
      assertTrue(
          assertThrows(
                  IllegalArgumentException.class,
                  () -> LaunchOptions.parse(List.of(flag, "0"), null))
              .getMessage()
              .startsWith(flag + " must be >= 1"));
  }

  @Test
  void aBareModelDirectoryIsNamedAsGivenOrByServedModelName() {
    assertEquals(
        Map.of("/models/qwen", "/models/qwen"),
        LaunchOptions.parse(List.of("--model", "/models/qwen"), null).models());
    assertEquals(
        Map.of("qwen", "/models/qwen"),
        LaunchOptions.parse(List.of("--model", "/models/qwen", "--served-model-name", "qwen"), null)
            .models());
    assertEquals(
        Map.of("tiny", "demo"),
        LaunchOptions.parse(List.of("--served-model-name", "tiny"), null).models(),
        "the default demo model renamed");
    ServedModels models =
        ServedModels.fromConfig(
            TroupeNode.config(
                    LaunchOptions.parse(
                        List.of("--model", "/m/q", "--served-model-name", "q", "--replicas", "q=2"),
                        null),
                    List.of())
                .withFallback(ConfigFactory.load()));
    assertEquals(List.of("q#0", "q#1"), models.find("q").orElseThrow().entityIds());
    // vLLM's several names: the first names the model, the others are its aliases
    LaunchOptions aliased =
        LaunchOptions.parse(
            List.of("--model", "/m/q", "--served-model-name", "a", "b", "--served-model-name=a,c"),
            null);
    assertEquals(Map.of("a", "/m/q"), aliased.models());
    assertEquals(List.of("c"), aliased.aliasesOf("a"), "the last flag wins, as argparse's");
    ServedModels served =
        ServedModels.fromConfig(
            TroupeNode.config(
                    LaunchOptions.parse(
                        List.of("--model", "/m/q", "--served-model-name", "a", "b", "c"), null),
                    List.of())
                .withFallback(ConfigFactory.load()));
    assertEquals(List.of("b", "c"), served.find("a").orElseThrow().aliases());
    assertEquals(List.of("a#0"), served.find("a").orElseThrow().entityIds(), "ids use the name");
    assertThrows(
        IllegalArgumentException.class,
        () ->
            LaunchOptions.parse(
                List.of("--model", "/m/q", "--served-model-name", "a", "b", "a"), null),
        "one name twice");
    assertThrows(
        IllegalArgumentException.class,
        () -> LaunchOptions.parse(List.of("--model", "q=/m/q", "--served-model-name", "x"), null));
    assertThrows(
        IllegalArgumentException.class,
        () ->
            LaunchOptions.parse(
                List.of("--model", "/a", "--model", "/b", "--served-model-name", "x"), null));
  }

  @Test
  void chatTemplateFromAFileOrInlineForTheOneModel(@TempDir Path dir) throws Exception {
    String source = "{% for m in messages %}{{ m.content }}{% endfor %}";
    Path file = Files.writeString(dir.resolve("t.jinja"), source);
    LaunchOptions fromFile =
        LaunchOptions.parse(List.of("--model", "m=/m", "--chat-template", file.toString()), null);
    assertEquals(Map.of("m", source), fromFile.chatTemplates());
    ServedModels models =
        ServedModels.fromConfig(
            TroupeNode.config(fromFile, List.of()).withFallback(ConfigFactory.load()));
    assertEquals(source, models.find("m").orElseThrow().chatTemplate());
    assertEquals(
        Map.of("demo", source),
        LaunchOptions.parse(List.of("--chat-template", source), null).chatTemplates(),
        "a value that is no file but holds {} is the template itself (vLLM)");
    assertTrue(
        assertThrows(
                IllegalArgumentException.class,
                () ->
                    LaunchOptions.parse(
                        List.of("--chat-template", dir.resolve("missing.jinja").toString()), null))
            .getMessage()
            .contains("looks like a file path, but it cannot be read (no such file)"));
    assertTrue(
        assertThrows(
                IllegalArgumentException.class,
                () -> LaunchOptions.parse(List.of("--chat-template", "{% for %}"), null))
            .getMessage()
            .startsWith("--chat-template does not compile"));
    assertTrue(
        assertThrows(
                IllegalArgumentException.class,
                () ->
                    LaunchOptions.parse(
                        List.of("--model", "a=/a", "--model", "b=/b", "--chat-template", source),
                        null))
            .getMessage()
            .contains("applies to one model"));
    assertEquals(Map.of(), LaunchOptions.parse(List.of(), null).chatTemplates(), "the tokenizer's");
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
