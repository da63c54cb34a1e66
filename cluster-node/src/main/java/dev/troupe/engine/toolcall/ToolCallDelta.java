package dev.troupe.engine.toolcall;

/**
 * One streamed piece of a tool call, OpenAI's {@code delta.tool_calls[]}: the first piece of a call
 * has {@code index}, {@code id}, {@code type: "function"} and {@code function.name}; later pieces
 * only {@code index} and a fragment of {@code function.arguments}. Concatenating a call's fragments
 * gives its {@code arguments}. Null fields are left out of the chunk.
 */
public record ToolCallDelta(int index, String id, String name, String arguments) {

  static ToolCallDelta header(int index, String id, String name) {
    return new ToolCallDelta(index, id, name, null);
  }

  static ToolCallDelta arguments(int index, String fragment) {
    return new ToolCallDelta(index, null, null, fragment);
  }

  /** {@code "function"} on the first piece of a call, else null. */
  public String type() {
    return id == null ? null : "function";
  }
}
