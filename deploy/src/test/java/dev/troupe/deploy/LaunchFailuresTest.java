package dev.troupe.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
 * {@code troupe serve} on a port that is taken: one line saying which port and flag, exit status 1,
 * no stack trace (before: a stack trace and status 0). Runs {@link Main} in a child JVM, as the
 * launcher does.
 */
class LaunchFailuresTest {
  @TempDir Path dir;

  private record Outcome(int status, String stdout, String stderr) {}

  private Outcome serve(String... flags) throws Exception {
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    command.addAll(
        List.of(
            "-Xmx256m",
            "--add-opens",
            "java.base/java.nio=ALL-UNNAMED",
            "--add-opens",
            "java.base/java.lang=ALL-UNNAMED",
            "--add-opens",
            "java.base/sun.nio.ch=ALL-UNNAMED",
            "-cp",
            System.getProperty("java.class.path"),
            Main.class.getName(),
            "serve",
            "--data-dir",
            dir.resolve("data").toString(),
            "--api-key",
            "k"));
    command.addAll(List.of(flags));
    Process child =
        new ProcessBuilder(command)
            .redirectOutput(dir.resolve("out").toFile())
            .redirectError(dir.resolve("err").toFile())
            .start();
    if (!child.waitFor(90, TimeUnit.SECONDS)) {
      child.destroyForcibly();
      throw new AssertionError("the node did not exit: " + Files.readString(dir.resolve("out")));
    }
    return new Outcome(
        child.exitValue(),
        Files.readString(dir.resolve("out")),
        Files.readString(dir.resolve("err")));
  }

  private static void assertOneLine(Outcome o, String expected) {
    assertEquals(1, o.status(), o.stderr() + o.stdout());
    List<String> lines =
        o.stderr().lines().filter(l -> !l.startsWith("WARNING: Using incubator")).toList();
    assertEquals(1, lines.size(), o.stderr());
    assertTrue(lines.get(0).startsWith("troupe: " + expected), lines.get(0));
    assertFalse(o.stdout().contains("\tat "), "no stack trace in the log: " + o.stdout());
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
