package dev.troupe.training;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import dev.troupe.deploy.LaunchOptions;
import dev.troupe.deploy.Main;
import dev.troupe.deploy.TroupeNode;
import dev.troupe.testing.ClasspathJar;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code examples/rl-loop} run as its documentation says, from a checkout where {@code ./troupe
 * serve} has built the jar: {@code java -cp deploy/target/troupe.jar examples/rl-loop/RlLoop.java
 * URL KEY demo JOBS}, one job here, against a node with the demo model. The jar is a {@link
 * ClasspathJar} (the tests run before packaging); the example file is the repository's. Before, the
 * documented class path named Jackson 2.17.2 jars under {@code ~/.m2}, which a fresh clone does not
 * have (the project uses another version).
 */
class RlLoopExampleTest {
  private static final String KEY = "sk-rl-example";
  @TempDir Path dir;

  @Test
  void theDocumentedCommandRunsAJob() throws Exception {
    Path repo = Path.of(System.getProperty("troupe.repo.dir", ".."));
    Path checkout = dir.resolve("checkout");
    ClasspathJar.write(checkout.resolve("deploy/target/troupe.jar"), Main.class.getName());
    Path example = checkout.resolve("examples/rl-loop/RlLoop.java");
    Files.createDirectories(example.getParent());
    Files.copy(repo.resolve("examples/rl-loop/RlLoop.java"), example);
    LaunchOptions o =
        LaunchOptions.parse(
            List.of(
                "--port",
                "0",
                "--cluster-port",
                "0",
                "--management-port",
                "-1",
                "--api-key",
                KEY,
                "--data-dir",
                dir.resolve("data").toString()),
            null);
    try (TroupeNode node =
        TroupeNode.start(
            o,
            ConfigFactory.parseString(
                "pekko.coordinated-shutdown.exit-jvm = off\n"
                    + "pekko.coordinated-shutdown.run-by-jvm-shutdown-hook = off\n"
                    + "pekko.loglevel = WARNING"),
            k -> {})) {
      Process run =
          new ProcessBuilder(
                  Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                  "-cp",
                  "deploy/target/troupe.jar",
                  "examples/rl-loop/RlLoop.java",
                  "http://localhost:" + node.httpPort(),
                  KEY,
                  "demo",
                  "1")
              .directory(checkout.toFile())
              .redirectErrorStream(true)
              .redirectOutput(dir.resolve("out").toFile())
              .start();
      assertTrue(run.waitFor(10, TimeUnit.MINUTES), "the example did not end");
      String out = Files.readString(dir.resolve("out"));
      assertEquals(0, run.exitValue(), out);
      assertTrue(out.matches("(?s).*job 1: reward [0-9.]+, training_ended, step 1\n.*"), out);
      assertTrue(out.contains("reward curve: ["), out);
    }
  }
}
