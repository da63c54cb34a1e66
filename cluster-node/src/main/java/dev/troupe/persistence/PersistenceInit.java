package dev.troupe.persistence;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Creates every table the node needs, idempotently, before any entity starts:
 * pekko-persistence-jdbc's journal, tag, snapshot and durable-state tables (its own bundled DDL,
 * made re-runnable) and the trajectory store. On PostgreSQL an advisory lock serialises nodes
 * starting at the same time.
 */
public final class PersistenceInit {
  private static final Logger log = LoggerFactory.getLogger(PersistenceInit.class);

  /** Arbitrary key of the advisory lock that guards schema creation on PostgreSQL. */
  private static final long SCHEMA_LOCK = 0x7472_6f75_7065L;

  private PersistenceInit() {}

  /** Creates what is missing; safe to call on every start and from several nodes at once. */
  public static void ensureSchema(PersistenceSettings s) {
    try {
      if (s.backend() == PersistenceSettings.Backend.H2) Files.createDirectories(s.dataDir());
      try (Connection c = DriverManager.getConnection(s.jdbcUrl(), s.user(), s.password())) {
        c.setAutoCommit(true);
        boolean pg = s.backend() == PersistenceSettings.Backend.POSTGRES;
        try (Statement st = c.createStatement()) {
          if (pg) st.execute("SELECT pg_advisory_lock(" + SCHEMA_LOCK + ")");
          try {
            for (String sql : statements(s.backend())) st.execute(sql);
          } finally {
            if (pg) st.execute("SELECT pg_advisory_unlock(" + SCHEMA_LOCK + ")");
          }
        }
      }
      log.info("Persistence schema ready on {} ({})", s.backend(), redacted(s.jdbcUrl()));
    } catch (SQLException | IOException e) {
      throw new IllegalStateException("cannot create the persistence schema: " + e.getMessage(), e);
    }
  }

  /** The DDL, in order. */
  static List<String> statements(PersistenceSettings.Backend backend) throws IOException {
    String resource =
        backend == PersistenceSettings.Backend.H2
            ? "schema/h2/h2-create-schema.sql"
            : "schema/postgres/postgres-create-schema.sql";
    List<String> out = new ArrayList<>();
    for (String sql : split(read(resource))) out.add(rerunnable(sql));
    out.addAll(
        split(read("dev/troupe/persistence/troupe-" + backend.name().toLowerCase() + ".sql")));
    return out;
  }

  /** pekko's scripts create indexes unconditionally (and concurrently on PostgreSQL). */
  private static String rerunnable(String sql) {
    return sql.replace("CREATE UNIQUE INDEX \"", "CREATE UNIQUE INDEX IF NOT EXISTS \"")
        .replace("CREATE UNIQUE INDEX event_", "CREATE UNIQUE INDEX IF NOT EXISTS event_")
        .replace("CREATE INDEX CONCURRENTLY ", "CREATE INDEX IF NOT EXISTS ");
  }

  private static List<String> split(String script) {
    List<String> out = new ArrayList<>();
    for (String part : script.split(";")) {
      String sql = part.strip();
      if (!sql.isEmpty()) out.add(sql);
    }
    return out;
  }

  private static String read(String resource) throws IOException {
    try (InputStream in = PersistenceInit.class.getClassLoader().getResourceAsStream(resource)) {
      if (in == null) throw new IOException("missing resource " + resource);
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  private static String redacted(String url) {
    int q = url.indexOf('?');
    return q < 0 ? url : url.substring(0, q);
  }
}
