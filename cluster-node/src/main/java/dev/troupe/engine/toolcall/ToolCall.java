package dev.troupe.engine.toolcall;

/**
 * One parsed tool call: OpenAI's {@code {"id", "type": "function", "function": {"name",
 * "arguments"}}} with {@code arguments} a JSON string.
 */
public record ToolCall(String id, String name, String arguments) {
  public ToolCall {
    if (id == null || name == null || arguments == null)
      throw new IllegalArgumentException("id, name and arguments are required");
  }
}
