package dev.troupe.protocol.cluster;

import dev.troupe.protocol.CborSerializable;

/**
 * How a chat request's output becomes tool calls, decided by the gateway from {@code tools} and
 * {@code tool_choice} (vLLM's serving layer): the worker's output processor turns the generated
 * text into {@code tool_calls} accordingly.
 *
 * @param mode {@code NONE}: plain content; {@code AUTO}: the model's tool-call parser finds calls
 *     in free text; {@code REQUIRED}: the output (constrained by a JSON schema) is a JSON array of
 *     {@code {"name", "parameters"}}; {@code NAMED}: the output (constrained by the function's
 *     parameters schema) is the arguments of {@code function}
 * @param function the named function ({@code NAMED}), else null
 * @param parser the tool-call parser ({@code AUTO}: hermes, llama3_json, mistral), else null
 * @param parallel more than one call allowed ({@code parallel_tool_calls}, default true); when
 *     false only the first call is kept ({@code REQUIRED}: the grammar allows one)
 */
public record ToolCalling(Mode mode, String function, String parser, boolean parallel)
    implements CborSerializable {

  public enum Mode {
    NONE,
    AUTO,
    REQUIRED,
    NAMED
  }

  public static final ToolCalling NONE = new ToolCalling(Mode.NONE, null, null, true);

  public ToolCalling {
    if (mode == null) throw new IllegalArgumentException("mode is required");
    if (mode == Mode.NAMED && (function == null || function.isEmpty()))
      throw new IllegalArgumentException("a named tool choice needs the function name");
    if (mode == Mode.AUTO && (parser == null || parser.isEmpty()))
      throw new IllegalArgumentException("auto tool choice needs a tool-call parser");
  }

  public static ToolCalling auto(String parser, boolean parallel) {
    return new ToolCalling(Mode.AUTO, null, parser, parallel);
  }

  public static ToolCalling required(boolean parallel) {
    return new ToolCalling(Mode.REQUIRED, null, null, parallel);
  }

  public static ToolCalling named(String function) {
    return new ToolCalling(Mode.NAMED, function, null, false);
  }
}
