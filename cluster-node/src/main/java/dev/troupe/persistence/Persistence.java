package dev.troupe.persistence;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import com.typesafe.config.ConfigValueFactory;
import java.util.HashMap;
import java.util.Map;

/**
 * The pekko-persistence-jdbc configuration for a {@link PersistenceSettings}: journal and snapshot
 * store on one shared Slick database (HikariCP pool). Use as an overlay in front of the node's
 * config: {@code Persistence.configFor(settings).withFallback(config)}. The trajectory log's large
 * messages across nodes need {@code LargeMessages.config()} too.
 */
public final class Persistence {
  private Persistence() {}

  /** The config overlay that points journal, snapshots and the read journal at the database. */
  public static Config configFor(PersistenceSettings s) {
    Map<String, Object> m = new HashMap<>();
    m.put("pekko.persistence.journal.plugin", "jdbc-journal");
    m.put("pekko.persistence.snapshot-store.plugin", "jdbc-snapshot-store");
    String db = "pekko-persistence-jdbc.shared-databases.troupe";
    m.put(db + ".profile", s.backend().slickProfile());
    m.put(db + ".db.url", s.jdbcUrl());
    m.put(db + ".db.user", s.user());
    m.put(db + ".db.password", s.password());
    m.put(db + ".db.driver", s.backend().driver());
    m.put(db + ".db.connectionPool", "HikariCP");
    m.put(db + ".db.numThreads", s.maxConnections());
    m.put(db + ".db.maxConnections", s.maxConnections());
    m.put(db + ".db.minConnections", 1);
    for (String plugin :
        new String[] {
          "jdbc-journal", "jdbc-snapshot-store", "jdbc-read-journal", "jdbc-durable-state-store"
        }) {
      m.put(plugin + ".use-shared-db", "troupe");
    }
    Config overlay = ConfigFactory.empty();
    for (Map.Entry<String, Object> e : m.entrySet()) {
      overlay = overlay.withValue(e.getKey(), ConfigValueFactory.fromAnyRef(e.getValue()));
    }
    return overlay;
  }
}
