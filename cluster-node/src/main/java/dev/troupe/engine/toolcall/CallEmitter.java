package dev.troupe.engine.toolcall;

import java.util.List;
import java.util.function.Supplier;

/**
 * Streams one call being read: its header delta once the name is known, then argument fragments as
 * they are re-spelled. A call that turns out malformed stops emitting (what was sent stays sent).
 */
final class CallEmitter {

  final CallReader reader;

  /** Characters fed to the reader before the current batch. */
  int fed;

  private final int index;
  private final Supplier<String> ids;
  private boolean headerSent;

  CallEmitter(CallReader reader, int index, Supplier<String> ids) {
    this.reader = reader;
    this.index = index;
    this.ids = ids;
  }

  void emit(List<ToolCallDelta> out) {
    if (reader.failed()) return;
    if (!headerSent && reader.name() != null) {
      out.add(ToolCallDelta.header(index, ids.get(), reader.name()));
      headerSent = true;
    }
    if (headerSent) {
      String a = reader.drainArguments();
      if (!a.isEmpty()) out.add(ToolCallDelta.arguments(index, a));
    }
  }

  boolean headerSent() {
    return headerSent;
  }

  /**
   * Feeds {@code text} and returns how many of its characters belong to the call object: all of
   * them while it is open, up to its end once done, none if it failed.
   */
  int feed(CharSequence text, List<ToolCallDelta> out) {
    reader.feed(text);
    emit(out);
    int consumed;
    if (reader.failed()) consumed = 0;
    else if (reader.done()) consumed = reader.end() - fed;
    else consumed = text.length();
    fed += text.length();
    return consumed;
  }
}
