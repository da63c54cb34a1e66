package dev.troupe.engine.structured;

import com.typesafe.config.Config;
import dev.troupe.engine.structured.grammar.Limits;

/**
 * Bounds and sizes of structured outputs, from {@code troupe.worker.structured-outputs} (see
 * cluster-node's {@code reference.conf}).
 *
 * @param limits per-grammar bounds (beyond them a request is a 400)
 * @param cacheEntries compiled grammars kept per replica
 * @param cacheBytes their total size bound
 * @param compileThreads threads one compile may use for its token tables (the calling one included)
 */
public record StructuredOutputSettings(
    Limits limits, int cacheEntries, long cacheBytes, int compileThreads) {

  public StructuredOutputSettings {
    if (cacheEntries < 0 || cacheBytes < 0 || compileThreads < 1)
      throw new IllegalArgumentException("bad structured-outputs settings");
  }

  public static StructuredOutputSettings fromConfig(Config c) {
    return new StructuredOutputSettings(
        new Limits(
            c.getInt("max-nfa-states"), c.getInt("max-states"), c.getBytes("max-table-bytes")),
        c.getInt("cache-entries"),
        c.getBytes("cache-bytes"),
        c.getInt("compile-threads") > 0
            ? c.getInt("compile-threads")
            : Math.max(1, Math.min(4, Runtime.getRuntime().availableProcessors() / 2)));
  }

  /** The defaults of reference.conf. */
  public static StructuredOutputSettings defaults() {
    return new StructuredOutputSettings(Limits.defaults(), 64, 512L << 20, 1);
  }
}
