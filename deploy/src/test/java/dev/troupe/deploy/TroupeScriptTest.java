package dev.troupe.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.gateway.routes.VersionRoute;
import dev.troupe.testing.ClasspathJar;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The {@code ./troupe} script itself, run by bash from a copy of the repository's script beside a
 * jar of {@link Main} ({@link ClasspathJar}). {@code --help} and {@code --version} print with no
 * JVM incubator notice before them (before: help started with it), and a jar older than the sources
 * it was built from is said to be (before: run silently); {@code MVN} names a Maven that is not
 * there, so nothing is rebuilt here.
 */
class TroupeScriptTest {
  @TempDir Path root;

  /** A copy of the script with {@code deploy/target/troupe.jar} built at {@code built}. */
  private void layout(Instant built) throws Exception {
    Path repo = Path.of(System.getProperty("troupe.repo.dir", ".."));
    Files.copy(repo.resolve("troupe"), root.resolve("troupe"));
    Path jar = ClasspathJar.write(root.resolve("deploy/target/troupe.jar"), Main.class.getName());
    Files.writeString(root.resolve("pom.xml"), "<project/>");
    Path source = Files.createDirectories(root.resolve("cluster-node/src/main/java/x"));
    Files.writeString(source.resolve("X.java"), "class X {}");
    for (Path p : List.of(root.resolve("pom.xml"), source.resolve("X.java")))
      Files.setLastModifiedTime(p, FileTime.from(Instant.parse("2020-01-01T00:00:00Z")));
    Files.setLastModifiedTime(jar, FileTime.from(built));
  }

  private ChildMain.Outcome troupe(String... args) throws Exception {
    List<String> command = new java.util.ArrayList<>(List.of("bash", "troupe"));
    command.addAll(List.of(args));
    ProcessBuilder b =
        new ProcessBuilder(command)
            .directory(root.toFile())
            .redirectOutput(root.resolve("out").toFile())
            .redirectError(root.resolve("err").toFile());
    b.environment().put("MVN", root.resolve("no-maven-here").toString());
    b.environment().put("JAVA", Path.of(System.getProperty("java.home"), "bin", "java").toString());
    b.environment().put("TROUPE_JAVA_OPTS", "-Xmx128m");
    Process p = b.start();
    assertTrue(p.waitFor(60, TimeUnit.SECONDS), "the script did not end");
    return new ChildMain.Outcome(
        p.exitValue(),
        Files.readString(root.resolve("out")),
        Files.readString(root.resolve("err")));
  }

  @Test
  void helpAndVersionPrintWithNothingBeforeThem() throws Exception {
    layout(Instant.parse("2021-01-01T00:00:00Z"));
    ChildMain.Outcome help = troupe("serve", "--help");
    assertEquals(0, help.status(), help.stderr());
    assertTrue(help.stdout().startsWith("Usage: troupe serve [options]"), help.stdout());
    assertEquals("", help.stderr(), "no incubator notice, no rebuild notice");
    ChildMain.Outcome version = troupe("--version");
    assertEquals(0, version.status(), version.stderr());
    assertEquals(VersionRoute.buildVersion() + "\n", version.stdout());
    assertEquals("", version.stderr());
  }

  @Test
  void aJarOlderThanTheSourcesIsSaidToBe() throws Exception {
    layout(Instant.parse("2019-01-01T00:00:00Z"));
    ChildMain.Outcome o = troupe("--version");
    assertEquals(0, o.status(), o.stderr());
    assertTrue(
        o.stderr().startsWith("troupe: " + root.resolve("deploy/target/troupe.jar") + " is older"),
        o.stderr());
    assertTrue(o.stderr().contains("it runs as built"), o.stderr());
    assertEquals(VersionRoute.buildVersion() + "\n", o.stdout(), "then runs it");
  }

  @Test
  void testSourcesAndBuildOutputDoNotMakeItStale() throws Exception {
    layout(Instant.parse("2021-01-01T00:00:00Z"));
    Files.createDirectories(root.resolve("cluster-node/src/test/java"));
    Files.writeString(root.resolve("cluster-node/src/test/java/T.java"), "class T {}");
    Files.createDirectories(root.resolve("cluster-node/target/classes"));
    Files.writeString(root.resolve("cluster-node/target/classes/X.class"), "");
    ChildMain.Outcome o = troupe("--version");
    assertEquals("", o.stderr());
    assertFalse(o.stdout().isEmpty());
  }
}
