package dev.troupe.engine.toolcall;

import java.util.Set;
import java.util.function.Supplier;

/** Helpers shared by the parsers. */
final class Calls {

  private Calls() {}

  /**
   * A whole call object (surrounding whitespace allowed, as {@code json.loads}), or null when it is
   * not valid JSON, has no string name or no arguments.
   */
  static ToolCall parse(String json, Set<String> argumentKeys, Supplier<String> ids) {
    CallReader r = new CallReader(argumentKeys);
    r.feed(json);
    r.finish();
    if (!r.valid() || !json.substring(r.end()).isBlank()) return null;
    return new ToolCall(ids.get(), r.name(), r.arguments());
  }

  /** Length of the longest proper suffix of {@code sb} that is a prefix of {@code tag}. */
  static int partialSuffix(CharSequence sb, String tag) {
    for (int n = Math.min(tag.length() - 1, sb.length()); n > 0; n--) {
      boolean match = true;
      for (int i = 0; i < n && match; i++)
        if (sb.charAt(sb.length() - n + i) != tag.charAt(i)) match = false;
      if (match) return n;
    }
    return 0;
  }
}
