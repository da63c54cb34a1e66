package dev.troupe.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.gateway.routes.VersionRoute;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The launcher's command line as a user meets it, through {@link Main} in a child JVM: {@code
 * --help} and {@code --version} on standard output with status 0 (before: help on standard error,
 * no version flag), a bad flag one line on standard error with status 2, wherever it stands
 * (before: a trailing unknown flag said it needed a value).
 */
class CommandLineTest {
  @TempDir Path dir;

  @Test
  void helpGoesToStandardOutput() throws Exception {
    ChildMain.Outcome o = ChildMain.run(dir, 60, List.of("serve", "--help"));
    assertEquals(0, o.status(), o.stderr());
    assertTrue(o.stdout().startsWith("Usage: troupe serve [options]\n"), o.stdout());
    assertTrue(o.stdout().contains("--max-model-len N"), o.stdout());
    assertEquals(List.of(), o.errorLines());
  }

  @Test
  void versionPrintsTheBuildsVersion() throws Exception {
    ChildMain.Outcome o = ChildMain.run(dir, 60, List.of("--version"));
    assertEquals(0, o.status(), o.stderr());
    assertEquals(VersionRoute.buildVersion() + "\n", o.stdout());
    assertEquals(List.of(), o.errorLines());
  }

  @Test
  void anUnknownFlagIsOneLineAndStatus2EvenLast() throws Exception {
    for (List<String> args :
        List.of(List.of("serve", "--bogus"), List.of("serve", "--port", "0", "--bogus", "1"))) {
      ChildMain.Outcome o = ChildMain.run(dir, 60, args);
      assertEquals(2, o.status(), o.stderr());
      assertEquals(List.of("troupe: unknown flag --bogus (see --help)"), o.errorLines());
      assertEquals("", o.stdout());
    }
  }
}
