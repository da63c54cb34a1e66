package dev.troupe.testing;

import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.jar.Attributes;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import java.util.stream.Collectors;

/**
 * A jar standing in for {@code deploy/target/troupe.jar} before the build has made it (tests run
 * before packaging): only a manifest, whose class path is this test JVM's (the classes the
 * distribution jar is shaded from) and whose main class is the launcher's. Commands that name the
 * jar ({@code java -jar}, {@code java -cp}) then run as documented.
 */
public final class ClasspathJar {
  private ClasspathJar() {}

  /** Writes the jar at {@code jar} (its folders made), with {@code mainClass} as Main-Class. */
  public static Path write(Path jar, String mainClass) throws IOException {
    Manifest manifest = new Manifest();
    Attributes main = manifest.getMainAttributes();
    main.put(Attributes.Name.MANIFEST_VERSION, "1.0");
    main.put(Attributes.Name.MAIN_CLASS, mainClass);
    main.put(
        Attributes.Name.CLASS_PATH,
        Arrays.stream(System.getProperty("java.class.path").split(File.pathSeparator))
            .map(e -> Path.of(e).toAbsolutePath().toUri().toString())
            .collect(Collectors.joining(" ")));
    Files.createDirectories(jar.getParent());
    try (OutputStream out = Files.newOutputStream(jar);
        JarOutputStream unused = new JarOutputStream(out, manifest)) {
      // the manifest is all it holds
    }
    return jar;
  }
}
