package dev.troupe.gateway.chat;

import com.typesafe.config.Config;
import java.time.Duration;

/**
 * How a generation's owner ({@link GenerationOwner}) waits for workers and moves a request whose
 * worker is lost: every bound it applies, one name each (read once from {@code
 * troupe.gateway.migration}; every key is commented in the module's {@code reference.conf}).
 *
 * @param enabled resume a lost request on another replica; off: the request ends with a 503
 * @param maxMigrations how many times one request may move before it is given up
 * @param deadline how long a lost request may wait for a replica to take it, from its loss; and how
 *     long a new request may wait for any worker to accept it, from its arrival (with migration on)
 * @param retryInterval how often a waiting request looks for a reachable replica again
 * @param acceptTimeout how long an attempt may wait for its replica's {@code Accepted} before it
 *     moves to another replica that can take it (a replica being restarted buffers it for tens of
 *     seconds); with no other replica it keeps waiting, up to {@code attemptTimeout}
 * @param attemptTimeout how long an attempt may go unacknowledged at all: then a first attempt is a
 *     503 and a continuation counts as lost (also with migration off)
 */
public record MigrationSettings(
    boolean enabled,
    int maxMigrations,
    Duration deadline,
    Duration retryInterval,
    Duration acceptTimeout,
    Duration attemptTimeout) {

  /** The default accept timeout: well above a loaded worker's time to acknowledge, below 30 s. */
  public static final Duration DEFAULT_ACCEPT_TIMEOUT = Duration.ofSeconds(5);

  /** The default attempt timeout (what the gateway's ask timeout is by default). */
  public static final Duration DEFAULT_ATTEMPT_TIMEOUT = Duration.ofSeconds(30);

  /** On, 3 moves, 60 s to find a replica (covers the downing and restart of a lone replica). */
  public static final MigrationSettings DEFAULT =
      new MigrationSettings(true, 3, Duration.ofSeconds(60), Duration.ofMillis(500));

  /** A lost worker ends its requests with a 503. */
  public static final MigrationSettings DISABLED =
      new MigrationSettings(false, 0, Duration.ofSeconds(1), Duration.ofMillis(500));

  public MigrationSettings {
    if (maxMigrations < 0) throw new IllegalArgumentException("max-migrations must be >= 0");
    positive(deadline, "deadline");
    positive(retryInterval, "retry-interval");
    positive(acceptTimeout, "accept-timeout");
    positive(attemptTimeout, "attempt-timeout");
  }

  private static void positive(Duration d, String key) {
    if (d == null || d.isNegative() || d.isZero())
      throw new IllegalArgumentException(key + " must be positive");
  }

  /** These bounds with the default accept and attempt timeouts. */
  public MigrationSettings(
      boolean enabled, int maxMigrations, Duration deadline, Duration retryInterval) {
    this(enabled, maxMigrations, deadline, retryInterval, DEFAULT_ACCEPT_TIMEOUT);
  }

  /** These bounds with the default attempt timeout. */
  public MigrationSettings(
      boolean enabled,
      int maxMigrations,
      Duration deadline,
      Duration retryInterval,
      Duration acceptTimeout) {
    this(enabled, maxMigrations, deadline, retryInterval, acceptTimeout, DEFAULT_ATTEMPT_TIMEOUT);
  }

  /** These settings with another attempt timeout. */
  public MigrationSettings withAttemptTimeout(Duration timeout) {
    return new MigrationSettings(
        enabled, maxMigrations, deadline, retryInterval, acceptTimeout, timeout);
  }

  /** Reads {@code troupe.gateway.migration}. */
  public static MigrationSettings fromConfig(Config config) {
    Config c = config.getConfig("troupe.gateway.migration");
    return new MigrationSettings(
        c.getBoolean("enabled"),
        c.getInt("max-migrations"),
        c.getDuration("deadline"),
        c.getDuration("retry-interval"),
        c.getDuration("accept-timeout"),
        c.getDuration("attempt-timeout"));
  }
}
