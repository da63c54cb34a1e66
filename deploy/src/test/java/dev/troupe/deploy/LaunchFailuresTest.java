package dev.troupe.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.engine.model.DType;
import dev.troupe.engine.testing.TinyModels;
import dev.troupe.engine.testing.TinyModels.Arch;
import dev.troupe.engine.tokenizer.TokenizerFixtures;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code troupe serve} that cannot serve: a port that is taken, a model that is not a model
 * directory or fails to load. Each is one line saying what and why, exit status 1, no stack trace
 * (before: a stack trace, and for a model "Troupe is serving" and a node that ran on). Runs {@link
 * Main} in a child JVM, as the launcher does.
 */
class LaunchFailuresTest {
  @TempDir Path dir;

  private ChildMain.Outcome serve(String... flags) throws Exception {
    List<String> args = new ArrayList<>();
    args.addAll(List.of("serve", "--data-dir", dir.resolve("data").toString(), "--api-key", "k"));
    args.addAll(List.of(flags));
    return ChildMain.run(dir, 120, args);
  }

  private static void assertOneLine(ChildMain.Outcome o, String expected) {
    assertEquals(1, o.status(), o.stderr() + o.stdout());
    List<String> lines = o.errorLines();
    assertEquals(1, lines.size(), o.stderr());
    assertTrue(lines.get(0).startsWith("troupe: " + expected), lines.get(0));
    assertFalse(o.stdout().contains("\tat "), "no stack trace in the log: " + o.stdout());
    assertFalse(o.stdout().contains("Troupe is serving"), o.stdout());
  }

  /** Free ports for a node that may start: nothing here may clash with another test's node. */
  private String[] anyPorts(String... more) {
    List<String> all =
        new ArrayList<>(List.of("--port", "0", "--cluster-port", "0", "--management-port", "-1"));
    all.addAll(List.of(more));
    return all.toArray(String[]::new);
  }

  @Test
  void aMissingModelDirectoryIsOneLine() throws Exception {
    assertOneLine(
        serve(anyPorts("--model", "foo=/nonexistent")), "model foo: no directory /nonexistent");
  }

  @Test
  void aHubIdIsToldThatModelsAreLocalAndHowToDownloadOne() throws Exception {
    ChildMain.Outcome o = serve(anyPorts("--model", "m=Qwen/Qwen3-0.6B"));
    assertOneLine(o, "model m: no directory ");
    String line = o.errorLines().get(0);
    assertTrue(line.contains("models are read from local directories"), line);
    assertTrue(line.contains("hf download Qwen/Qwen3-0.6B --local-dir models/Qwen3-0.6B"), line);
  }

  @Test
  void aDirectoryWithoutConfigOrWeightsIsOneLine() throws Exception {
    Path empty = Files.createDirectories(dir.resolve("empty"));
    assertOneLine(
        serve(anyPorts("--model", "e=" + empty)), "model e: no config.json in " + empty + " (");
    Path noWeights = TinyModels.write(dir.resolve("noweights"), Arch.QWEN3, DType.F32, 1, false);
    Files.delete(noWeights.resolve("model.safetensors"));
    assertOneLine(
        serve(anyPorts("--model", "w=" + noWeights)), "model w: no weights in " + noWeights);
  }

  @Test
  void aModelThatFailsToLoadStopsTheNodeWithTheReason() throws Exception {
    // Everything a model directory holds, but its weights cut short: only loading finds that.
    Path model = TinyModels.write(dir.resolve("cut"), Arch.QWEN3, DType.F32, 1, false);
    for (String f : List.of("tokenizer.json", "tokenizer_config.json"))
      Files.copy(TokenizerFixtures.dir("qwen3").resolve(f), model.resolve(f));
    Files.write(model.resolve("model.safetensors"), new byte[] {1, 2, 3, 4});
    assertOneLine(
        serve(anyPorts("--model", "cut=" + model)),
        "model cut failed to load: " + model.resolve("model.safetensors") + ": truncated");
  }

  @Test
  void servingIsSaidOnlyOnceTheModelHasLoaded() throws Exception {
    List<String> args =
        new ArrayList<>(
            List.of("serve", "--data-dir", dir.resolve("data").toString(), "--api-key", "k"));
    args.addAll(List.of(anyPorts()));
    Process node = ChildMain.start(dir, args);
    try {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(180);
      while (!ChildMain.stdout(dir).contains("Troupe is serving")) {
        assertTrue(node.isAlive(), ChildMain.stdout(dir) + ChildMain.stderr(dir));
        assertTrue(System.nanoTime() < deadline, "not serving: " + ChildMain.stdout(dir));
        Thread.sleep(200);
      }
      String out = ChildMain.stdout(dir);
      int loaded = out.indexOf("demo#0 loaded in");
      assertTrue(loaded >= 0, out);
      assertTrue(loaded < out.indexOf("Troupe is serving"), out);
    } finally {
      node.destroy(); // SIGTERM: the node leaves and exits
      if (!node.waitFor(60, TimeUnit.SECONDS)) node.destroyForcibly();
    }
  }

  @Test
  void aTakenHttpPortIsOneLineAndStatus1() throws Exception {
    try (ServerSocket taken = new ServerSocket()) {
      taken.bind(new InetSocketAddress("127.0.0.1", 0));
      int port = taken.getLocalPort();
      assertOneLine(
          serve("--port", "" + port, "--cluster-port", "0", "--management-port", "-1"),
          "cannot listen on 127.0.0.1:" + port + " for the HTTP API (--port): ");
    }
  }

  @Test
  void aTakenClusterPortIsOneLineAndStatus1() throws Exception {
    try (ServerSocket taken = new ServerSocket()) {
      taken.bind(new InetSocketAddress("127.0.0.1", 0));
      int port = taken.getLocalPort();
      assertOneLine(
          serve("--port", "0", "--cluster-port", "" + port, "--management-port", "-1"),
          "cannot listen on 127.0.0.1:" + port + " for the cluster (--cluster-port): ");
    }
  }

  @Test
  void anAddressThatIsNotLocalIsOneLineToo() throws Exception {
    // 192.0.2.1 is TEST-NET-1 (RFC 5737): never an address of this machine
    assertOneLine(
        serve(
            "--port", "0", "--cluster-port", "0", "--management-port", "-1", "--bind", "192.0.2.1"),
        "cannot listen on 192.0.2.1:");
  }
}
