package dev.troupe.worker;

import dev.troupe.engine.model.ModelLoadException;
import dev.troupe.engine.runner.Devices;
import java.io.UncheckedIOException;

/** Why a replica's model did not load, said in one line (vLLM: one line, then the exit). */
final class LoadFailures {
  private LoadFailures() {}

  /**
   * A failure its operator fixes (a directory that is not a model, a file that does not parse, a
   * missing device, too small a heap), as opposed to a bug, whose stack trace belongs in the log.
   */
  static boolean expected(Throwable e) {
    return e instanceof ModelLoadException
        || e instanceof IllegalArgumentException
        || e instanceof UncheckedIOException
        || e instanceof Devices.NoDeviceException
        || e instanceof OutOfMemoryError;
  }

  /** The reason, on one line. */
  static String describe(Throwable e) {
    if (e instanceof OutOfMemoryError)
      return "out of memory ("
          + e.getMessage()
          + "): give the JVM a larger heap (TROUPE_JAVA_OPTS=-Xmx...) or serve a smaller model";
    String m = e.getMessage() == null ? e.toString() : e.getMessage();
    return m.replaceAll("\\s*\\R\\s*", " ").strip();
  }
}
