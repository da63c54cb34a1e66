package dev.troupe.engine.toolcall;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Hermes-style tool calls (Qwen2, Qwen2.5, Qwen3): {@code <tool_call>{"name": …, "arguments":
 * {…}}</tool_call>}, one or more. As vLLM's {@code hermes} parser: the content is the text before
 * the first {@code <tool_call>} (null if empty); text after the calls is dropped; an unterminated
 * last call is parsed up to the end; one malformed call means no calls at all and the whole text is
 * content. Streaming sends the content before the first tag, then per call a header delta and
 * argument fragments.
 */
final class HermesToolParser implements ToolCallParser {

  static final String START = "<tool_call>";
  static final String END = "</tool_call>";
  private static final Pattern CALL =
      Pattern.compile("<tool_call>(.*?)</tool_call>|<tool_call>(.*)", Pattern.DOTALL);
  private static final Set<String> ARGS = Set.of("arguments");

  private final Supplier<String> ids;

  HermesToolParser(Supplier<String> ids) {
    this.ids = ids;
  }

  @Override
  public String name() {
    return "hermes";
  }

  @Override
  public Extraction extract(String output) {
    int first = output.indexOf(START);
    if (first < 0) return new Extraction(output, List.of());
    List<ToolCall> calls = new ArrayList<>();
    Matcher m = CALL.matcher(output);
    while (m.find()) {
      String json = m.group(1) != null ? m.group(1) : m.group(2);
      ToolCall call = Calls.parse(json, ARGS, ids);
      if (call == null) return new Extraction(output, List.of());
      calls.add(call);
    }
    String content = output.substring(0, first);
    return new Extraction(content.isEmpty() ? null : content, calls);
  }

  @Override
  public Session open() {
    return new HermesSession();
  }

  private final class HermesSession implements Session {
    private final StringBuilder held = new StringBuilder();
    private boolean sawCall;
    private CallEmitter call; // the call being read, or null between calls
    private boolean callObjectDone; // the object ended: waiting for </tool_call>
    private int calls;

    @Override
    public Step push(String text) {
      held.append(text);
      StringBuilder content = new StringBuilder();
      List<ToolCallDelta> deltas = new ArrayList<>();
      while (held.length() > 0) {
        if (call == null) {
          int at = held.indexOf(START);
          if (at < 0) {
            int keep = Calls.partialSuffix(held, START);
            if (!sawCall) content.append(held, 0, held.length() - keep);
            held.delete(0, held.length() - keep);
            break;
          }
          if (!sawCall) content.append(held, 0, at);
          held.delete(0, at + START.length());
          sawCall = true;
          call = new CallEmitter(new CallReader(ARGS), calls++, ids);
          callObjectDone = false;
        } else if (!callObjectDone) {
          int consumed = call.feed(held, deltas);
          held.delete(0, consumed);
          if (call.reader.done() || call.reader.failed()) callObjectDone = true;
          else break;
        } else {
          int at = held.indexOf(END);
          if (at < 0) {
            int keep = Calls.partialSuffix(held, END);
            held.delete(0, held.length() - keep);
            break;
          }
          held.delete(0, at + END.length());
          call = null;
        }
      }
      return new Step(content.toString(), deltas);
    }

    @Override
    public Step finish() {
      List<ToolCallDelta> deltas = new ArrayList<>();
      String content = "";
      if (call != null && !callObjectDone) {
        call.reader.finish();
        call.emit(deltas);
      } else if (call == null && !sawCall) {
        content = held.toString();
      }
      held.setLength(0);
      return new Step(content, deltas);
    }
  }
}
