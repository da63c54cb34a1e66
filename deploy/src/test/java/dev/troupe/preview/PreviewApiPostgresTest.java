package dev.troupe.preview;

import dev.troupe.persistence.PersistenceSettings;
import org.junit.jupiter.api.BeforeAll;

/** The preview API suite on a real PostgreSQL server started by the tests. */
class PreviewApiPostgresTest extends PreviewApiSuite {
  private PersistenceSettings settings;

  @BeforeAll
  @Override
  void startNode() {
    try {
      settings = PersistenceSettings.postgres(RealPostgres.sharedDatabase(), "postgres", "");
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
    super.startNode();
  }

  @Override
  PersistenceSettings settings() {
    return settings;
  }
}
