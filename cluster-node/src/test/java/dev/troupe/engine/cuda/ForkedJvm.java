package dev.troupe.engine.cuda;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/**
 * Runs a main class of the test classpath in a new JVM: the tests that load CUDA's libraries (real
 * or stand-ins) do it there, where {@code LD_LIBRARY_PATH} is read at start and nothing they load
 * stays in the test JVM. The CPU runner's tests fork too, to run where oneDNN sees less of the CPU.
 */
public record ForkedJvm(int exitCode, String output) {
  static final int TIMEOUT_SECONDS = 600;

  /** The test classpath (Surefire's, else this JVM's), without the entries {@code drop} names. */
  public static String classpath(Predicate<String> drop) {
    String cp =
        System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    return String.join(
        File.pathSeparator,
        Arrays.stream(cp.split(File.pathSeparator)).filter(drop.negate()).toList());
  }

  /**
   * Runs {@code main} with {@code args}; {@code env} entries replace the inherited ones (a null
   * value removes one). Output (stdout and stderr) is kept in {@code log}.
   */
  public static ForkedJvm run(
      String classpath,
      Map<String, String> env,
      List<String> jvmOptions,
      Path log,
      Class<?> main,
      String... args) {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.addAll(jvmOptions);
    cmd.addAll(List.of("-cp", classpath, main.getName()));
    cmd.addAll(List.of(args));
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
    pb.redirectOutput(log.toFile());
    env.forEach(
        (k, v) -> {
          if (v == null) pb.environment().remove(k);
          else pb.environment().put(k, v);
        });
    try {
      Process p = pb.start();
      if (!p.waitFor(TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        return new ForkedJvm(-1, read(log) + "\n[killed after " + TIMEOUT_SECONDS + " s]");
      }
      return new ForkedJvm(p.exitValue(), read(log));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  public static String read(Path file) {
    try {
      return Files.exists(file) ? Files.readString(file, StandardCharsets.UTF_8) : "";
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
