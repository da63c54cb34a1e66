package dev.troupe.engine.toolcall;

import dev.troupe.engine.toolcall.ToolCallParser.Step;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.function.Supplier;

/**
 * The tool calls of a constrained output, for {@code tool_choice: "required"} and a named function
 * (vLLM's serving layer): the grammar guarantees the shape, these read it.
 *
 * <ul>
 *   <li>{@link #required}: the output is a JSON array of {@code {"name": …, "parameters": {…}}};
 *       each element is a call, its arguments spelled as Python's {@code json.dumps} (vLLM's); the
 *       content is empty. A call cut short by {@code max_tokens} is left out.
 *   <li>{@link #named}: the output is the arguments of the named function, taken as they are
 *       (vLLM's); one call.
 * </ul>
 */
public final class ForcedToolCalls {

  private ForcedToolCalls() {}

  public static ToolCallParser required(Supplier<String> ids) {
    return new Required(ids);
  }

  public static ToolCallParser named(String function, Supplier<String> ids) {
    return new Named(function, ids);
  }

  private static final class Required implements ToolCallParser {
    private final Supplier<String> ids;

    Required(Supplier<String> ids) {
      this.ids = ids;
    }

    @Override
    public String name() {
      return "required";
    }

    @Override
    public Extraction extract(String output) {
      ArraySession s = new ArraySession(() -> "");
      s.push(output);
      s.finish();
      List<ToolCall> calls = new ArrayList<>();
      for (CallReader r : s.complete) calls.add(new ToolCall(ids.get(), r.name(), r.arguments()));
      return new Extraction(null, calls);
    }

    @Override
    public Session open() {
      return new ArraySession(ids);
    }
  }

  /** Reads {@code [call, call, …]}, streaming each call as it is read. */
  private static final class ArraySession implements ToolCallParser.Session {
    private static final Set<String> ARGS = Set.of("parameters");
    private final Supplier<String> ids;
    private final StringBuilder held = new StringBuilder();
    final List<CallReader> complete = new ArrayList<>();
    private boolean started;
    private boolean over;
    private CallEmitter call;
    private int calls;

    ArraySession(Supplier<String> ids) {
      this.ids = ids;
    }

    @Override
    public Step push(String text) {
      held.append(text);
      List<ToolCallDelta> deltas = new ArrayList<>();
      while (held.length() > 0 && !over) {
        if (call != null) {
          int consumed = call.feed(held, deltas);
          held.delete(0, consumed);
          if (call.reader.failed()) {
            over = true;
          } else if (call.reader.done()) {
            complete.add(call.reader);
            call = null;
          } else {
            break;
          }
          continue;
        }
        char c = held.charAt(0);
        held.deleteCharAt(0);
        if (Character.isWhitespace(c)) continue;
        if (!started) {
          if (c != '[') over = true;
          started = true;
        } else if (c == ',' && calls > 0) {
          // next element
        } else if (c == ']') {
          over = true;
        } else if (c == '{') {
          call = new CallEmitter(new CallReader(ARGS), calls++, ids);
          call.feed("{", deltas);
        } else {
          over = true;
        }
      }
      if (over) held.setLength(0);
      return new Step("", deltas);
    }

    @Override
    public Step finish() {
      List<ToolCallDelta> deltas = new ArrayList<>();
      if (call != null) {
        call.reader.finish();
        call.emit(deltas);
        if (call.reader.valid()) complete.add(call.reader);
        call = null;
      }
      return new Step("", deltas);
    }
  }

  private static final class Named implements ToolCallParser {
    private final String function;
    private final Supplier<String> ids;

    Named(String function, Supplier<String> ids) {
      this.function = function;
      this.ids = ids;
    }

    @Override
    public String name() {
      return "named";
    }

    @Override
    public Extraction extract(String output) {
      return new Extraction(null, List.of(new ToolCall(ids.get(), function, output)));
    }

    @Override
    public Session open() {
      return new Session() {
        private boolean headerSent;

        @Override
        public Step push(String text) {
          if (text.isEmpty()) return Step.EMPTY;
          List<ToolCallDelta> deltas = new ArrayList<>(1);
          if (!headerSent) {
            headerSent = true;
            deltas.add(new ToolCallDelta(0, ids.get(), function, text));
          } else {
            deltas.add(ToolCallDelta.arguments(0, text));
          }
          return new Step("", deltas);
        }

        @Override
        public Step finish() {
          if (headerSent) return Step.EMPTY;
          headerSent = true;
          return new Step("", List.of(new ToolCallDelta(0, ids.get(), function, "")));
        }
      };
    }
  }
}
