package dev.troupe.trajectory;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.troupe.persistence.PersistenceSettings;
import dev.troupe.protocol.cluster.TrajectoryLogProtocol.StoredGroup;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;

/**
 * {@link TrajectoryStore} on the same database as the journal (H2 or PostgreSQL), through its own
 * HikariCP pool. Table {@code troupe_trajectory_group}, created by {@code PersistenceInit}.
 */
public final class JdbcTrajectoryStore implements TrajectoryStore {
  /** Rows per JDBC batch: keeps a 50 MB log from becoming one giant driver buffer. */
  private static final int BATCH = 64;

  private final HikariDataSource pool;

  public JdbcTrajectoryStore(PersistenceSettings s) {
    HikariConfig hc = new HikariConfig();
    hc.setPoolName("troupe-trajectory-store");
    hc.setJdbcUrl(s.jdbcUrl());
    if (!s.user().isEmpty()) hc.setUsername(s.user());
    if (!s.password().isEmpty()) hc.setPassword(s.password());
    hc.setDriverClassName(s.backend().driver());
    hc.setMaximumPoolSize(s.maxConnections());
    hc.setMinimumIdle(1);
    hc.setAutoCommit(false);
    this.pool = new HikariDataSource(hc);
  }

  @Override
  public void write(String modelId, long firstSeq, List<Rows> rows) {
    long now = System.currentTimeMillis();
    try (Connection c = pool.getConnection()) {
      try {
        try (PreparedStatement del =
            c.prepareStatement(
                "DELETE FROM troupe_trajectory_group WHERE model_id = ? AND seq >= ?")) {
          del.setString(1, modelId);
          del.setLong(2, firstSeq);
          del.executeUpdate();
        }
        try (PreparedStatement ins =
            c.prepareStatement(
                "INSERT INTO troupe_trajectory_group (model_id, seq, split, step, logged_at,"
                    + " payload) VALUES (?, ?, ?, ?, ?, ?)")) {
          long seq = firstSeq;
          int pending = 0;
          for (Rows r : rows) {
            for (byte[] group : r.groups()) {
              ins.setString(1, modelId);
              ins.setLong(2, seq++);
              ins.setString(3, r.split());
              ins.setLong(4, r.step());
              ins.setLong(5, now);
              ins.setBytes(6, group);
              ins.addBatch();
              if (++pending % BATCH == 0) ins.executeBatch();
            }
          }
          ins.executeBatch();
        }
        c.commit();
      } catch (SQLException e) {
        c.rollback();
        throw e;
      }
    } catch (SQLException e) {
      throw new IllegalStateException("trajectory store write failed: " + e.getMessage(), e);
    }
  }

  @Override
  public Page read(
      String modelId, String split, long afterSeq, long committedEnd, int limit, long maxBytes) {
    String sql =
        "SELECT seq, split, step, logged_at, payload FROM troupe_trajectory_group"
            + " WHERE model_id = ? AND seq > ? AND seq < ?"
            + (split == null ? "" : " AND split = ?")
            + " ORDER BY seq LIMIT ?";
    List<StoredGroup> out = new ArrayList<>();
    boolean more = false;
    try (Connection c = pool.getConnection();
        PreparedStatement ps = c.prepareStatement(sql)) {
      int i = 1;
      ps.setString(i++, modelId);
      ps.setLong(i++, afterSeq);
      ps.setLong(i++, committedEnd);
      if (split != null) ps.setString(i++, split);
      ps.setInt(i, limit + 1);
      ps.setFetchSize(Math.min(limit + 1, 16));
      long bytes = 0;
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          if (out.size() >= limit || (!out.isEmpty() && bytes >= maxBytes)) {
            more = true;
            break;
          }
          byte[] payload = rs.getBytes(5);
          bytes += payload.length;
          out.add(
              new StoredGroup(
                  rs.getLong(1), rs.getString(2), rs.getLong(3), rs.getLong(4), payload));
        }
      }
      c.commit();
    } catch (SQLException e) {
      throw new IllegalStateException("trajectory store read failed: " + e.getMessage(), e);
    }
    return new Page(out, more);
  }

  @Override
  public long deleteModel(String modelId) {
    try (Connection c = pool.getConnection();
        PreparedStatement ps =
            c.prepareStatement("DELETE FROM troupe_trajectory_group WHERE model_id = ?")) {
      ps.setString(1, modelId);
      long n = ps.executeUpdate();
      c.commit();
      return n;
    } catch (SQLException e) {
      throw new IllegalStateException("trajectory store delete failed: " + e.getMessage(), e);
    }
  }

  @Override
  public void close() {
    pool.close();
  }
}
