package dev.troupe.engine.output;

import dev.troupe.engine.reasoning.ReasoningParser;
import dev.troupe.engine.toolcall.ToolCall;
import dev.troupe.engine.toolcall.ToolCallDelta;
import dev.troupe.engine.toolcall.ToolCallParser;
import java.util.ArrayList;
import java.util.List;

/**
 * One choice's final text (after stop strings) split into reasoning, content and tool calls, as
 * vLLM's serving layer does after its detokenizer: the reasoning parser first, then the tool-call
 * parser on the content.
 *
 * <p>Streamed requests get every piece as it is known. Non-streamed ones get vLLM's whole-output
 * extraction: content and tool calls are held to the end and extracted from the whole content (so a
 * malformed call leaves the text as content, as vLLM's full generator does); reasoning still flows
 * step by step (its split is the same either way).
 *
 * <p>Not thread-safe: one per choice, on the engine thread.
 */
final class ChoiceParsing {

  private final ReasoningParser.Session reasoning; // null: no reasoning split
  private final ToolCallParser tools; // null: no tool calls
  private final ToolCallParser.Session toolStream; // streamed requests with tools
  private final StringBuilder wholeContent; // non-streamed requests with tools
  private final boolean oneCall; // parallel_tool_calls false: only the first call is kept
  private int calls;

  /** One step's pieces; tool-call deltas as OpenAI streams them. */
  record Piece(String reasoning, String content, List<ToolCallDelta> toolCalls) {
    static final Piece EMPTY = new Piece("", "", List.of());

    Piece {
      toolCalls = List.copyOf(toolCalls);
    }
  }

  ChoiceParsing(
      ReasoningParser.Session reasoning, ToolCallParser tools, boolean streamed, boolean oneCall) {
    this.oneCall = oneCall;
    this.reasoning = reasoning;
    this.tools = tools;
    this.toolStream = tools != null && streamed ? tools.open() : null;
    this.wholeContent = tools != null && !streamed ? new StringBuilder() : null;
  }

  /** Whether this choice parses anything (else text passes through as content). */
  boolean active() {
    return reasoning != null || tools != null;
  }

  Piece push(String text) {
    if (text.isEmpty()) return Piece.EMPTY;
    String r = "";
    String content = text;
    if (reasoning != null) {
      ReasoningParser.Delta d = reasoning.onText(text);
      r = d.reasoning();
      content = d.content();
    }
    return content(r, content, false);
  }

  /** The end of the choice: what was held back, and for non-streamed tools the extraction. */
  Piece finish() {
    String r = "";
    String content = "";
    if (reasoning != null) {
      ReasoningParser.Delta d = reasoning.finish();
      r = d.reasoning();
      content = d.content();
    }
    return content(r, content, true);
  }

  private Piece content(String r, String content, boolean last) {
    if (toolStream != null) {
      List<ToolCallDelta> deltas = new ArrayList<>();
      String c = "";
      if (!content.isEmpty()) {
        ToolCallParser.Step s = toolStream.push(content);
        c = s.content();
        deltas.addAll(s.deltas());
      }
      if (last) {
        ToolCallParser.Step s = toolStream.finish();
        c += s.content();
        deltas.addAll(s.deltas());
      }
      if (oneCall) deltas.removeIf(d -> d.index() > 0);
      for (ToolCallDelta d : deltas) if (d.id() != null) calls++;
      return new Piece(r, c, deltas);
    }
    if (wholeContent != null) {
      wholeContent.append(content);
      if (!last) return new Piece(r, "", List.of());
      ToolCallParser.Extraction x = tools.extract(wholeContent.toString());
      calls = oneCall ? Math.min(1, x.calls().size()) : x.calls().size();
      List<ToolCallDelta> deltas = new ArrayList<>();
      for (int i = 0; i < x.calls().size(); i++) {
        if (oneCall && i > 0) break;
        ToolCall c = x.calls().get(i);
        deltas.add(new ToolCallDelta(i, c.id(), c.name(), c.arguments()));
      }
      return new Piece(r, x.content() == null ? "" : x.content(), deltas);
    }
    return new Piece(r, content, List.of());
  }

  /** Where the text split stands: content only, in the reasoning, or after it. */
  RequestUpdate.Split split() {
    if (reasoning == null) return RequestUpdate.Split.CONTENT;
    if (reasoning.textPhase() == ReasoningParser.Phase.REASONING)
      return RequestUpdate.Split.REASONING;
    return reasoning.sawReasoning()
        ? RequestUpdate.Split.AFTER_REASONING
        : RequestUpdate.Split.CONTENT;
  }

  /** How many tool calls the choice made. */
  int toolCalls() {
    return calls;
  }
}
