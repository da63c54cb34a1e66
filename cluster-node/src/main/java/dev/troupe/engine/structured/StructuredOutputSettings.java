package dev.troupe.engine.structured;

import com.typesafe.config.Config;
import dev.troupe.engine.structured.grammar.Limits;
import dev.troupe.engine.structured.syntax.JsonSchemaConverter;

/**
 * Bounds and sizes of structured outputs, from {@code troupe.worker.structured-outputs} (see
 * cluster-node's {@code reference.conf}).
 *
 * @param limits per-grammar bounds (beyond them a request is a 400)
 * @param cacheEntries compiled grammars kept per replica
 * @param cacheBytes their total size bound
 * @param compileThreads threads one compile may use for its token tables (the calling one included)
 * @param maxJsonWhitespace whitespace characters in a row that a JSON constraint allows when the
 *     request sets neither {@code disable_any_whitespace} nor {@code whitespace_pattern}; {@link
 *     JsonSchemaConverter.Options#UNBOUNDED} for any number (vLLM's behaviour)
 * @param completeWithinMaxTokens near the end of a choice's {@code max_tokens}, allow only tokens
 *     after which the constrained output can still be completed in the tokens left, so it ends
 *     valid (with {@code length}); false: it is cut there, as vLLM does
 */
public record StructuredOutputSettings(
    Limits limits,
    int cacheEntries,
    long cacheBytes,
    int compileThreads,
    int maxJsonWhitespace,
    boolean completeWithinMaxTokens) {

  public StructuredOutputSettings {
    if (cacheEntries < 0 || cacheBytes < 0 || compileThreads < 1)
      throw new IllegalArgumentException("bad structured-outputs settings");
    if (maxJsonWhitespace < JsonSchemaConverter.Options.UNBOUNDED)
      throw new IllegalArgumentException("max-json-whitespace must be >= 0 or off");
  }

  public static StructuredOutputSettings fromConfig(Config c) {
    return new StructuredOutputSettings(
        new Limits(
            c.getInt("max-nfa-states"), c.getInt("max-states"), c.getBytes("max-table-bytes")),
        c.getInt("cache-entries"),
        c.getBytes("cache-bytes"),
        c.getInt("compile-threads") > 0
            ? c.getInt("compile-threads")
            : Math.max(1, Math.min(4, Runtime.getRuntime().availableProcessors() / 2)),
        maxJsonWhitespace(c),
        c.getBoolean("complete-within-max-tokens"));
  }

  /** {@code max-json-whitespace}: a count, or {@code off} for no bound. */
  private static int maxJsonWhitespace(Config c) {
    String key = "max-json-whitespace";
    if (c.getValue(key).valueType() == com.typesafe.config.ConfigValueType.STRING
        && c.getString(key).equals("off")) return JsonSchemaConverter.Options.UNBOUNDED;
    int n = c.getInt(key);
    if (n < 0)
      throw new com.typesafe.config.ConfigException.BadValue(
          c.origin(), key, "must be a count >= 0, or off");
    return n;
  }

  /** The defaults of reference.conf. */
  public static StructuredOutputSettings defaults() {
    return new StructuredOutputSettings(
        Limits.defaults(),
        64,
        512L << 20,
        1,
        JsonSchemaConverter.Options.DEFAULT_MAX_WHITESPACE,
        true);
  }

  /** These settings with another whitespace bound ({@code UNBOUNDED}: none). */
  public StructuredOutputSettings withMaxJsonWhitespace(int n) {
    return new StructuredOutputSettings(
        limits, cacheEntries, cacheBytes, compileThreads, n, completeWithinMaxTokens);
  }

  /** These settings with outputs kept completable within max_tokens, or cut there (false). */
  public StructuredOutputSettings withCompleteWithinMaxTokens(boolean on) {
    return new StructuredOutputSettings(
        limits, cacheEntries, cacheBytes, compileThreads, maxJsonWhitespace, on);
  }
}
