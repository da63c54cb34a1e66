package dev.troupe.bench.hostile;

import java.util.function.IntFunction;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

/** Request bodies the cases vary. */
final class Bodies {
  private Bodies() {}

  static final String MESSAGES = "[{\"role\":\"user\",\"content\":\"Hello\"}]";

  /** A small chat (4 tokens) to the served model, with {@code extra} fields (",\"k\":v…"). */
  static String chat(Target t, String extra) {
    return chatWithModel(t.model, extra);
  }

  static String chatWithModel(String model, String extra) {
    return "{\"model\":\""
        + model
        + "\",\"messages\":"
        + MESSAGES
        + ",\"max_tokens\":4"
        + extra
        + "}";
  }

  /** A JSON array of {@code n} items. */
  static String array(int n, IntFunction<String> item) {
    return IntStream.range(0, n).mapToObj(item).collect(Collectors.joining(",", "[", "]"));
  }

  /** A JSON object of {@code n} entries. */
  static String object(int n, IntFunction<String> entry) {
    return IntStream.range(0, n).mapToObj(entry).collect(Collectors.joining(",", "{", "}"));
  }
}
