package dev.troupe.persistence;

import com.typesafe.config.Config;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Objects;

/**
 * Where journals, snapshots and the trajectory store live, read once from {@code
 * troupe.persistence} (see this module's {@code reference.conf}).
 *
 * @param backend H2 (embedded file under {@code dataDir}, the default) or PostgreSQL
 * @param jdbcUrl the resolved JDBC URL
 * @param user database user ("" for none)
 * @param password database password ("" for none)
 * @param maxConnections pool size of each of the two pools (journal, trajectory store)
 * @param snapshotEvery events between snapshots of an entity
 * @param idempotencyKeysKept most recent {@code Idempotency-Key}s each trajectory log remembers
 */
public record PersistenceSettings(
    Backend backend,
    Path dataDir,
    String jdbcUrl,
    String user,
    String password,
    int maxConnections,
    int snapshotEvery,
    int idempotencyKeysKept) {

  /** The supported databases. */
  public enum Backend {
    H2,
    POSTGRES;

    /** The JDBC driver class. */
    public String driver() {
      return this == H2 ? "org.h2.Driver" : "org.postgresql.Driver";
    }

    /** The Slick profile pekko-persistence-jdbc uses. */
    public String slickProfile() {
      return this == H2 ? "slick.jdbc.H2Profile$" : "slick.jdbc.PostgresProfile$";
    }
  }

  public PersistenceSettings {
    Objects.requireNonNull(backend, "backend");
    Objects.requireNonNull(jdbcUrl, "jdbcUrl");
    user = user == null ? "" : user;
    password = password == null ? "" : password;
    if (maxConnections < 1) throw new IllegalArgumentException("max-connections must be >= 1");
    if (snapshotEvery < 1) throw new IllegalArgumentException("snapshot-every must be >= 1");
    if (idempotencyKeysKept < 0)
      throw new IllegalArgumentException("idempotency-keys-kept must be >= 0");
  }

  /** Reads {@code troupe.persistence} from a full config. */
  public static PersistenceSettings fromConfig(Config root) {
    Config c = root.getConfig("troupe.persistence");
    Backend backend =
        switch (c.getString("backend").toLowerCase(Locale.ROOT)) {
          case "h2" -> Backend.H2;
          case "postgres", "postgresql" -> Backend.POSTGRES;
          default ->
              throw new IllegalArgumentException(
                  "troupe.persistence.backend must be h2 or postgres, not "
                      + c.getString("backend"));
        };
    Path dataDir = Path.of(c.getString("data-dir")).toAbsolutePath().normalize();
    String url =
        backend == Backend.H2
            ? h2Url(dataDir.resolve(c.getString("h2.file-name")))
            : c.getString("postgres.url");
    String user = backend == Backend.H2 ? "" : c.getString("postgres.user");
    String password = backend == Backend.H2 ? "" : c.getString("postgres.password");
    return new PersistenceSettings(
        backend,
        dataDir,
        url,
        user,
        password,
        c.getInt("max-connections"),
        c.getInt("snapshot-every"),
        c.getInt("idempotency-keys-kept"));
  }

  /** Embedded H2 at {@code file} (no extension). */
  public static PersistenceSettings h2(Path file) {
    return new PersistenceSettings(
        Backend.H2, file.toAbsolutePath().getParent(), h2Url(file), "", "", 4, 100, 10_000);
  }

  /** PostgreSQL at {@code url}. */
  public static PersistenceSettings postgres(String url, String user, String password) {
    return new PersistenceSettings(
        Backend.POSTGRES, Path.of("."), url, user, password, 4, 100, 10_000);
  }

  /**
   * WRITE_DELAY=0: H2 otherwise flushes commits up to 500 ms late, and a killed process would lose
   * groups it had already acknowledged. MAX_COMPACT_TIME=0: no chunk moving when the database
   * closes; H2 2.3.232's move tripped its own assertion there ({@code compactMoveChunks}, seen in
   * RlLoopOverHttpTest under -ea), and the file is compacted while it runs anyway.
   */
  static String h2Url(Path file) {
    return "jdbc:h2:file:"
        + file.toAbsolutePath().normalize()
        + ";DATABASE_TO_UPPER=false;WRITE_DELAY=0;MAX_COMPACT_TIME=0";
  }

  /** The same settings with another snapshot interval (tests). */
  public PersistenceSettings withSnapshotEvery(int n) {
    return new PersistenceSettings(
        backend, dataDir, jdbcUrl, user, password, maxConnections, n, idempotencyKeysKept);
  }
}
