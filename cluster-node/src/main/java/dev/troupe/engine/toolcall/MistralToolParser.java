package dev.troupe.engine.toolcall;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.function.Supplier;

/**
 * Mistral tool calls after the {@code [TOOL_CALLS]} token: a JSON array of {@code {"name",
 * "arguments"}} objects (pre-v11 tokenizers) or {@code name[ARGS]{…}} per call (v11+, each call
 * after its own {@code [TOOL_CALLS]}). As vLLM's {@code mistral} parser: the content is the text
 * before the first {@code [TOOL_CALLS]} (null if empty); malformed calls give no calls and the text
 * without the markers as content. {@code [TOOL_CALLS]} is a special token, so the text must be
 * decoded with special tokens kept ({@link #needsSpecialTokens}); ids are nine alphanumerics.
 */
final class MistralToolParser implements ToolCallParser {

  static final String BOT = "[TOOL_CALLS]";
  static final String ARGS_TAG = "[ARGS]";
  private static final Set<String> ARGS = Set.of("arguments");

  private final Supplier<String> ids;

  MistralToolParser(Supplier<String> ids) {
    this.ids = ids;
  }

  @Override
  public String name() {
    return "mistral";
  }

  @Override
  public boolean needsSpecialTokens() {
    return true;
  }

  @Override
  public Extraction extract(String output) {
    int first = output.indexOf(BOT);
    if (first < 0) return new Extraction(output, List.of());
    String content = output.substring(0, first);
    String rest = output.substring(first + BOT.length());
    List<ToolCall> calls = rest.strip().startsWith("[") ? array(rest) : named(rest);
    if (calls == null || calls.isEmpty())
      return new Extraction(output.replace(BOT, "").strip(), List.of());
    return new Extraction(content.isEmpty() ? null : content, calls);
  }

  /** {@code [{"name": …, "arguments": …}, …]}; null if malformed. */
  private List<ToolCall> array(String text) {
    MistralSession s = new MistralSession();
    s.push(BOT + text);
    s.finish();
    if (!s.valid) return null;
    return s.result.stream().map(c -> new ToolCall(ids.get(), c.name(), c.arguments())).toList();
  }

  /** {@code name[ARGS]{…}} (or {@code name{…}}), calls separated by further markers. */
  private List<ToolCall> named(String text) {
    List<ToolCall> calls = new ArrayList<>();
    for (String part : text.split(java.util.regex.Pattern.quote(BOT))) {
      int args = part.indexOf(ARGS_TAG);
      int brace = part.indexOf('{');
      int cut = args >= 0 ? args : brace;
      if (cut <= 0) return null;
      String fname = part.substring(0, cut).strip();
      String json = part.substring(args >= 0 ? args + ARGS_TAG.length() : brace);
      CallReader r = CallReader.bareArguments(fname);
      r.feed(json);
      r.finish();
      if (!r.valid() || !json.substring(r.end()).isBlank() || fname.isEmpty()) return null;
      calls.add(new ToolCall(ids.get(), fname, r.arguments()));
    }
    return calls;
  }

  @Override
  public Session open() {
    return new MistralSession();
  }

  /**
   * Streaming: content until the marker, then calls. The array form streams each element; the
   * named form streams a call once its name is complete ({@code [ARGS]} or {@code {} seen).
   */
  private final class MistralSession implements Session {
    private final StringBuilder held = new StringBuilder();
    // 0 content, 1 after marker (undecided), 2 array, 3 named: name, 4 named: args, 5 ignore the
    // rest, 6 named: between calls
    private int mode;
    private CallEmitter call;
    private int calls;
    private boolean arrayStarted;
    private final StringBuilder name = new StringBuilder();
    final List<ToolCall> result = new ArrayList<>();
    boolean valid = true;

    @Override
    public Step push(String text) {
      held.append(text);
      StringBuilder content = new StringBuilder();
      List<ToolCallDelta> deltas = new ArrayList<>();
      while (held.length() > 0) {
        switch (mode) {
          case 0 -> {
            int at = held.indexOf(BOT);
            if (at < 0) {
              int keep = Calls.partialSuffix(held, BOT);
              content.append(held, 0, held.length() - keep);
              held.delete(0, held.length() - keep);
              return new Step(content.toString(), deltas);
            }
            content.append(held, 0, at);
            held.delete(0, at + BOT.length());
            mode = 1;
          }
          case 1 -> {
            while (held.length() > 0 && Character.isWhitespace(held.charAt(0)))
              held.deleteCharAt(0);
            if (held.length() == 0) return new Step(content.toString(), deltas);
            mode = held.charAt(0) == '[' ? 2 : 3;
          }
          case 2 -> {
            if (!arrayElement(deltas)) return new Step(content.toString(), deltas);
          }
          case 3 -> {
            int args = held.indexOf(ARGS_TAG);
            int brace = held.indexOf("{");
            int cut = args >= 0 && (brace < 0 || args < brace) ? args : brace;
            if (cut < 0) {
              int keep = Calls.partialSuffix(held, ARGS_TAG);
              name.append(held, 0, held.length() - keep);
              held.delete(0, held.length() - keep);
              return new Step(content.toString(), deltas);
            }
            name.append(held, 0, cut);
            held.delete(0, cut == args ? cut + ARGS_TAG.length() : cut);
            call = new CallEmitter(CallReader.bareArguments(name.toString().strip()), calls++, ids);
            name.setLength(0);
            mode = 4;
          }
          case 4 -> {
            int consumed = call.feed(held, deltas);
            held.delete(0, consumed);
            if (call.reader.failed()) {
              broken();
            } else if (call.reader.done()) {
              finishCall();
              mode = 6;
            } else {
              return new Step(content.toString(), deltas);
            }
          }
          case 6 -> {
            // between named calls: only another marker matters
            int at = held.indexOf(BOT);
            if (at < 0) {
              held.delete(0, held.length() - Calls.partialSuffix(held, BOT));
              return new Step(content.toString(), deltas);
            }
            held.delete(0, at + BOT.length());
            mode = 3;
          }
          default -> held.setLength(0);
        }
      }
      return new Step(content.toString(), deltas);
    }

    /** Advances through the array; false when more text is needed. */
    private boolean arrayElement(List<ToolCallDelta> deltas) {
      if (call == null) {
        int i = 0;
        while (i < held.length() && Character.isWhitespace(held.charAt(i))) i++;
        if (i == held.length()) {
          held.setLength(0);
          return false;
        }
        char c = held.charAt(i);
        if (!arrayStarted) {
          if (c != '[') {
            broken();
            return true;
          }
          arrayStarted = true;
          held.delete(0, i + 1);
          return true;
        }
        if (c == ',' && calls > 0) {
          held.delete(0, i + 1);
          return true;
        }
        if (c == ']') {
          held.setLength(0);
          mode = 5; // the array is complete; anything after is ignored
          return true;
        }
        if (c != '{') {
          broken();
          return true;
        }
        held.delete(0, i);
        call = new CallEmitter(new CallReader(ARGS), calls++, ids);
      }
      int consumed = call.feed(held, deltas);
      held.delete(0, consumed);
      if (call.reader.failed()) broken();
      else if (call.reader.done()) finishCall();
      else return false;
      return true;
    }

    private void finishCall() {
      if (call.reader.valid())
        result.add(new ToolCall("-", call.reader.name(), call.reader.arguments()));
      call = null;
    }

    private void broken() {
      valid = false;
      mode = 5;
      held.setLength(0);
    }

    @Override
    public Step finish() {
      List<ToolCallDelta> deltas = new ArrayList<>();
      String content = mode == 0 ? held.toString() : "";
      if (call != null) {
        call.reader.finish();
        call.emit(deltas);
        if (call.reader.valid()) finishCall();
        else valid = false;
      }
      if (mode == 2 && arrayStarted) valid = false; // unterminated array
      if (mode == 3 && name.length() > 0) valid = false;
      held.setLength(0);
      return new Step(content, deltas);
    }
  }
}
