package dev.troupe.preview;

import dev.troupe.persistence.PersistenceSettings;
import java.nio.file.Path;
import org.junit.jupiter.api.io.TempDir;

/** The preview API suite on the default embedded H2 file database. */
class PreviewApiH2Test extends PreviewApiSuite {
  @TempDir static Path dir;

  @Override
  PersistenceSettings settings() {
    return PersistenceSettings.h2(dir.resolve("troupe"));
  }
}
