package dev.troupe.preview;

import dev.troupe.persistence.PersistenceSettings;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** The preview API suite on a real PostgreSQL server started by the test. */
class PreviewApiPostgresTest extends PreviewApiSuite {
  private RealPostgres postgres;
  private PersistenceSettings settings;

  @BeforeAll
  @Override
  void startNode() {
    try {
      postgres = RealPostgres.start();
      settings = PersistenceSettings.postgres(postgres.createDatabase("suite"), "postgres", "");
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
    super.startNode();
  }

  @AfterAll
  @Override
  void stopNode() throws Exception {
    super.stopNode();
    if (postgres != null) postgres.close();
  }

  @Override
  PersistenceSettings settings() {
    return settings;
  }
}
