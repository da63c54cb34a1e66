package dev.troupe.deploy;

import com.typesafe.config.Config;
import java.time.Duration;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.event.EventStream;
import org.apache.pekko.event.LogMarker;
import org.apache.pekko.event.slf4j.Slf4jLoggingFilter;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Pekko's SLF4J logging filter ({@code pekko.logging-filter}) with a bound on how fast one Pekko
 * class may log: at most {@code troupe.pekko-log-bound.lines} lines of INFO and above per {@code
 * troupe.pekko-log-bound.per}; the rest of that window is dropped and counted, and the count is
 * logged (one WARN line) when that class next logs in a later window.
 *
 * <p>Why: some of Pekko's logging repeats as fast as input arrives, and input can be anyone's. Junk
 * written to the cluster port can make Artery's TCP framing emit the same malformed frame forever
 * (its frame-length arithmetic overflows; docs/upstream), each one a "Dropping message" warning:
 * 25-32 MB of log per second until the disk is full. Pekko asks the filter before it formats a
 * line, so a dropped line costs one counter. Troupe's own loggers are not affected.
 */
public final class BoundedPekkoLogging extends Slf4jLoggingFilter {
  private static final Logger log = LoggerFactory.getLogger(BoundedPekkoLogging.class);

  private final int lines;
  private final long windowNanos;
  private final ConcurrentHashMap<Class<?>, Window> windows = new ConcurrentHashMap<>();

  /** Pekko's constructor for a logging filter. */
  public BoundedPekkoLogging(ActorSystem.Settings settings, EventStream eventStream) {
    super(settings, eventStream);
    Config c = settings.config().getConfig("troupe.pekko-log-bound");
    this.lines = c.getInt("lines");
    Duration per = c.getDuration("per");
    if (lines < 1 || per.isNegative() || per.isZero())
      throw new IllegalArgumentException(
          "troupe.pekko-log-bound: lines and per must be positive, got " + lines + " per " + per);
    this.windowNanos = per.toNanos();
  }

  @Override
  public boolean isErrorEnabled(Class<?> logClass, String logSource) {
    return super.isErrorEnabled(logClass, logSource) && admit(logClass);
  }

  @Override
  public boolean isWarningEnabled(Class<?> logClass, String logSource) {
    return super.isWarningEnabled(logClass, logSource) && admit(logClass);
  }

  @Override
  public boolean isInfoEnabled(Class<?> logClass, String logSource) {
    return super.isInfoEnabled(logClass, logSource) && admit(logClass);
  }

  @Override
  public boolean isErrorEnabled(Class<?> logClass, String logSource, LogMarker marker) {
    return super.isErrorEnabled(logClass, logSource, marker) && admit(logClass);
  }

  @Override
  public boolean isWarningEnabled(Class<?> logClass, String logSource, LogMarker marker) {
    return super.isWarningEnabled(logClass, logSource, marker) && admit(logClass);
  }

  @Override
  public boolean isInfoEnabled(Class<?> logClass, String logSource, LogMarker marker) {
    return super.isInfoEnabled(logClass, logSource, marker) && admit(logClass);
  }

  private boolean admit(Class<?> logClass) {
    long dropped;
    Window w = windows.computeIfAbsent(logClass, k -> new Window());
    synchronized (w) {
      long now = System.nanoTime();
      dropped = 0;
      if (now - w.start >= windowNanos) {
        dropped = w.dropped;
        w.start = now;
        w.admitted = 0;
        w.dropped = 0;
      }
      if (w.admitted >= lines) {
        w.dropped++;
        return false;
      }
      w.admitted++;
    }
    if (dropped > 0)
      log.warn(
          "Dropped {} log lines of {} (more than {} per {} ms, troupe.pekko-log-bound)",
          dropped,
          logClass.getName(),
          lines,
          windowNanos / 1_000_000);
    return true;
  }

  /** One class's current window. Guarded by itself. */
  private static final class Window {
    long start = System.nanoTime();
    int admitted;
    long dropped;
  }
}
