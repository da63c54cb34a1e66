package dev.troupe.preview;

import dev.troupe.persistence.PersistenceSettings;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A node in its own JVM, for the kill -9 test: starts on the H2 database at {@code args[0]}, writes
 * its HTTP port to {@code args[1]}, and runs until killed.
 */
public final class LogNodeMain {
  private LogNodeMain() {}

  public static void main(String[] args) throws Exception {
    PreviewNode node = PreviewNode.start(PersistenceSettings.h2(Path.of(args[0])));
    Path portFile = Path.of(args[1]);
    Path tmp = portFile.resolveSibling(portFile.getFileName() + ".tmp");
    Files.writeString(
        tmp, Integer.toString(node.binding.localAddress().getPort()), StandardCharsets.UTF_8);
    Files.move(tmp, portFile);
    Thread.currentThread().join();
  }
}
