package dev.troupe.engine.toolcall;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.function.Supplier;

/**
 * Llama 3.x JSON tool calls: the whole output is {@code {"name": …, "parameters": {…}}} (or
 * {@code "arguments"}), optionally after {@code <|python_tag|>}, several separated by {@code ;}.
 * As vLLM's {@code llama3_json}: an output that does not start with the tag or {@code {} is content;
 * one that does but does not parse as calls throughout is content too; calls leave no content.
 */
final class Llama3JsonToolParser implements ToolCallParser {

  static final String BOT = "<|python_tag|>";
  private static final Set<String> ARGS = Set.of("arguments", "parameters");

  private final Supplier<String> ids;

  Llama3JsonToolParser(Supplier<String> ids) {
    this.ids = ids;
  }

  @Override
  public String name() {
    return "llama3_json";
  }

  @Override
  public Extraction extract(String output) {
    if (!output.startsWith(BOT) && !output.startsWith("{"))
      return new Extraction(output, List.of());
    int pos = output.startsWith(BOT) ? BOT.length() : 0;
    List<ToolCall> calls = new ArrayList<>();
    while (pos < output.length()) {
      CallReader r = new CallReader(ARGS);
      r.feed(output.substring(pos));
      r.finish();
      if (!r.valid()) return new Extraction(output, List.of());
      calls.add(new ToolCall(ids.get(), r.name(), r.arguments()));
      pos = skipSeparator(output, pos + r.end());
      if (pos < 0) return new Extraction(output, List.of());
    }
    if (calls.isEmpty()) return new Extraction(output, List.of());
    return new Extraction(null, calls);
  }

  /** After a call: whitespace, an optional ';', whitespace; -1 if something else follows. */
  private static int skipSeparator(String s, int pos) {
    while (pos < s.length() && Character.isWhitespace(s.charAt(pos))) pos++;
    if (pos < s.length() && s.charAt(pos) == ';') pos++;
    while (pos < s.length() && Character.isWhitespace(s.charAt(pos))) pos++;
    if (pos < s.length() && s.charAt(pos) != '{') return -1;
    return pos;
  }

  @Override
  public Session open() {
    return new Llama3Session();
  }

  private final class Llama3Session implements Session {
    private final StringBuilder held = new StringBuilder();
    private int mode; // 0 undecided, 1 content, 2 calls, 3 broken calls
    private CallEmitter call;
    private int calls;

    @Override
    public Step push(String text) {
      held.append(text);
      StringBuilder content = new StringBuilder();
      List<ToolCallDelta> deltas = new ArrayList<>();
      while (held.length() > 0) {
        if (mode == 0) {
          String h = held.toString();
          if (h.startsWith(BOT)) {
            held.delete(0, BOT.length());
            mode = 2;
          } else if (h.startsWith("{")) {
            mode = 2;
          } else if (BOT.startsWith(h)) {
            break;
          } else {
            mode = 1;
          }
        } else if (mode == 1) {
          content.append(held);
          held.setLength(0);
        } else if (mode == 3) {
          held.setLength(0);
        } else if (call == null) {
          int pos = skipSeparator(held.toString(), 0);
          if (pos < 0) {
            mode = 3;
            continue;
          }
          held.delete(0, pos);
          if (held.length() == 0) break;
          call = new CallEmitter(new CallReader(ARGS), calls++, ids);
        } else {
          int consumed = call.feed(held, deltas);
          held.delete(0, consumed);
          if (call.reader.failed()) mode = 3;
          else if (call.reader.done()) call = null;
          else break;
        }
      }
      return new Step(content.toString(), deltas);
    }

    @Override
    public Step finish() {
      List<ToolCallDelta> deltas = new ArrayList<>();
      String content = mode == 0 ? held.toString() : "";
      if (mode == 2 && call != null) {
        call.reader.finish();
        call.emit(deltas);
      }
      held.setLength(0);
      return new Step(content, deltas);
    }
  }
}
