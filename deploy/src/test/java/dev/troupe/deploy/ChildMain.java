package dev.troupe.deploy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * {@link Main} run in a child JVM, as the launcher runs it (the tests' classpath, the launcher's
 * {@code --add-opens}), its standard output and error captured into files under {@code dir}.
 */
final class ChildMain {
  private ChildMain() {}

  /** How a finished child ended: its exit status and what it printed. */
  record Outcome(int status, String stdout, String stderr) {
    /** Standard error without the JVM's own incubator-module notice. */
    List<String> errorLines() {
      return stderr.lines().filter(l -> !l.startsWith("WARNING: Using incubator")).toList();
    }
  }

  /** Starts {@code Main args...}; the output goes to {@code dir/out} and {@code dir/err}. */
  static Process start(Path dir, List<String> args) throws IOException {
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
            Main.class.getName()));
    command.addAll(args);
    return new ProcessBuilder(command)
        .redirectOutput(dir.resolve("out").toFile())
        .redirectError(dir.resolve("err").toFile())
        .start();
  }

  /** Runs {@code Main args...} to its end (at most {@code seconds}). */
  static Outcome run(Path dir, int seconds, List<String> args) throws Exception {
    Process child = start(dir, args);
    if (!child.waitFor(seconds, TimeUnit.SECONDS)) {
      child.destroyForcibly();
      throw new AssertionError("Main did not exit: " + stdout(dir) + stderr(dir));
    }
    return new Outcome(child.exitValue(), stdout(dir), stderr(dir));
  }

  static String stdout(Path dir) throws IOException {
    return Files.readString(dir.resolve("out"));
  }

  static String stderr(Path dir) throws IOException {
    return Files.readString(dir.resolve("err"));
  }
}
