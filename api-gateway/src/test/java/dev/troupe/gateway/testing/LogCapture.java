package dev.troupe.gateway.testing;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.util.List;
import org.slf4j.LoggerFactory;

/**
 * What one class logs while a test provokes it, kept from the build's output: a test that makes a
 * component log an ERROR on purpose asserts the line instead of printing it (a passing build shows
 * no expected ERRORs). Closing puts the logger back as it was.
 */
public final class LogCapture implements AutoCloseable {
  private final Logger logger;
  private final boolean additive;
  private final ListAppender<ILoggingEvent> events = new ListAppender<>();

  private LogCapture(Class<?> source) {
    logger = (Logger) LoggerFactory.getLogger(source);
    additive = logger.isAdditive();
    events.start();
    logger.addAppender(events);
    logger.setAdditive(false);
  }

  /** Captures what {@code source}'s logger logs until closed. */
  public static LogCapture of(Class<?> source) {
    return new LogCapture(source);
  }

  /** The messages logged at ERROR so far, formatted, in order. */
  public List<String> errors() {
    return events.list.stream()
        .filter(e -> e.getLevel() == Level.ERROR)
        .map(ILoggingEvent::getFormattedMessage)
        .toList();
  }

  @Override
  public void close() {
    logger.detachAppender(events);
    logger.setAdditive(additive);
  }
}
