package dev.troupe.protocol.api.chat;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.annotation.JsonNaming;
import java.util.List;

/**
 * One {@code data:} event of a streamed chat completion. As in vLLM ("exclude unset"), keys that do
 * not apply to a chunk are left out rather than written as null: {@code usage} only on the usage
 * chunk (or every chunk with continuous usage stats), {@code prompt_token_ids} only on the first
 * chunks with {@code return_token_ids}.
 */
@JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
@JsonPropertyOrder({
  "id",
  "object",
  "created",
  "model",
  "system_fingerprint",
  "choices",
  "usage",
  "prompt_token_ids"
})
public record ChatCompletionChunk(
    String id,
    String object,
    long created,
    String model,
    List<ChunkChoice> choices,
    @JsonInclude(JsonInclude.Include.NON_NULL) Usage usage,
    @JsonInclude(JsonInclude.Include.NON_NULL) List<Integer> promptTokenIds,
    @JsonInclude(JsonInclude.Include.NON_NULL) String systemFingerprint) {

  public static final String OBJECT = "chat.completion.chunk";

  public ChatCompletionChunk {
    choices = List.copyOf(choices);
  }

  /**
   * One choice's part of a chunk. {@code logprobs} and {@code finish_reason} are always written
   * (null while unset); {@code stop_reason} appears on the finishing chunk, {@code token_ids} with
   * {@code return_token_ids}.
   */
  @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
  @JsonPropertyOrder({"index", "delta", "logprobs", "finish_reason", "stop_reason", "token_ids"})
  public record ChunkChoice(
      int index,
      Delta delta,
      ChoiceLogprobs logprobs,
      String finishReason,
      @JsonInclude(JsonInclude.Include.NON_NULL) Object stopReason,
      @JsonInclude(JsonInclude.Include.NON_NULL) List<Integer> tokenIds) {}

  /**
   * The increment of a choice's message: {@code role} only on the first chunk of a choice;
   * reasoning in both {@code reasoning} and {@code reasoning_content} (vLLM v0.11); tool-call
   * pieces as OpenAI streams them.
   */
  @JsonInclude(JsonInclude.Include.NON_NULL)
  @JsonPropertyOrder({"role", "content", "reasoning", "reasoning_content", "tool_calls"})
  @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
  public record Delta(
      String role,
      String content,
      String reasoning,
      String reasoningContent,
      List<DeltaToolCall> toolCalls) {
    public Delta(String role, String content, String reasoning, String reasoningContent) {
      this(role, content, reasoning, reasoningContent, null);
    }

    public static Delta role(String role) {
      return new Delta(role, "", null, null);
    }

    public static Delta content(String text) {
      return new Delta(null, text, null, null);
    }

    public static Delta empty() {
      return new Delta(null, null, null, null);
    }
  }

  /**
   * One piece of a streamed tool call: the first piece of a call has {@code id}, {@code type} and
   * {@code function.name}; later pieces a fragment of {@code function.arguments}.
   */
  @JsonInclude(JsonInclude.Include.NON_NULL)
  @JsonPropertyOrder({"index", "id", "type", "function"})
  public record DeltaToolCall(int index, String id, String type, DeltaFunction function) {}

  /** {@code delta.tool_calls[].function}. */
  @JsonInclude(JsonInclude.Include.NON_NULL)
  @JsonPropertyOrder({"name", "arguments"})
  public record DeltaFunction(String name, String arguments) {}
}
