package dev.troupe.engine.core;

import dev.troupe.engine.reasoning.ReasoningParser;
import dev.troupe.protocol.cluster.ToolCalling;
import java.util.Map;

/**
 * How the output processor splits a request's text: the model's reasoning parser (with the
 * request's template kwargs, which say whether thinking is on) and the request's tool calling.
 *
 * @param reasoning the model's reasoning parser, or null
 * @param chatTemplateKwargs the request's template kwargs ({@code enable_thinking})
 * @param toolCalling how the content becomes tool calls
 * @param streamed parse tool calls as the text grows (streamed requests) or once at the end
 */
public record TextParsing(
    ReasoningParser reasoning,
    Map<String, Object> chatTemplateKwargs,
    ToolCalling toolCalling,
    boolean streamed) {

  /** Plain content. */
  public static final TextParsing NONE = new TextParsing(null, Map.of(), ToolCalling.NONE, true);

  public TextParsing {
    chatTemplateKwargs = chatTemplateKwargs == null ? Map.of() : chatTemplateKwargs;
    if (toolCalling == null) toolCalling = ToolCalling.NONE;
  }

  public boolean active() {
    return reasoning != null || toolCalling.mode() != ToolCalling.Mode.NONE;
  }
}
