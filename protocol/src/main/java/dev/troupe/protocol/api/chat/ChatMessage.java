package dev.troupe.protocol.api.chat;

import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.annotation.JsonNaming;
import java.util.List;
import java.util.Map;

/**
 * The message of a non-streaming choice, vLLM v0.11's shape: {@code refusal}, {@code annotations},
 * {@code audio} and {@code function_call} are always null, {@code tool_calls} an empty list, and
 * {@code reasoning_content} mirrors {@code reasoning}.
 */
@JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
@JsonPropertyOrder({
  "role",
  "content",
  "refusal",
  "annotations",
  "audio",
  "function_call",
  "tool_calls",
  "reasoning",
  "reasoning_content"
})
public record ChatMessage(
    String role,
    String content,
    String refusal,
    Map<String, Object> annotations,
    Map<String, Object> audio,
    Map<String, Object> functionCall,
    List<Map<String, Object>> toolCalls,
    String reasoning,
    String reasoningContent) {

  /** A plain reply: {@code role} and {@code content}, optional reasoning, nothing else. */
  public static ChatMessage of(String role, String content, String reasoning) {
    return new ChatMessage(role, content, null, null, null, null, List.of(), reasoning, reasoning);
  }
}
