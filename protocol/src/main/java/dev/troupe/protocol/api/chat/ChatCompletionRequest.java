package dev.troupe.protocol.api.chat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.annotation.JsonNaming;
import dev.troupe.protocol.api.SamplingFields;
import java.math.BigInteger;
import java.util.List;
import java.util.Map;

/**
 * The body of {@code POST /v1/chat/completions}, every field of the spec, exactly as the client
 * sent it: null means absent (or JSON null). Types are checked by Jackson (a wrong type is a 400
 * naming the field); values, defaults and cross-field rules are the gateway's {@code
 * ChatRequestMapper}'s. Unknown fields are ignored, as in vLLM.
 *
 * <p>Fields typed {@link JsonNode} accept more than one JSON shape ({@code stop}: string or list;
 * {@code tool_choice}: string or object; {@code logits_processors}: strings or constructor
 * objects). {@code seed} is a {@link BigInteger} so that out-of-range values reach validation and
 * get a clear message instead of a parser overflow.
 */
@JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
public record ChatCompletionRequest(
    List<Map<String, Object>> messages,
    String model,
    Double frequencyPenalty,
    Map<String, Double> logitBias,
    Boolean logprobs,
    Integer topLogprobs,
    Integer maxTokens,
    Integer maxCompletionTokens,
    Integer n,
    Double presencePenalty,
    ResponseFormat responseFormat,
    BigInteger seed,
    JsonNode stop,
    Boolean stream,
    StreamOptions streamOptions,
    Double temperature,
    Double topP,
    List<Tool> tools,
    JsonNode toolChoice,
    String reasoningEffort,
    Boolean includeReasoning,
    Boolean parallelToolCalls,
    String user,
    Boolean useBeamSearch,
    Integer topK,
    Double minP,
    Double repetitionPenalty,
    Double lengthPenalty,
    List<Integer> stopTokenIds,
    Boolean includeStopStrInOutput,
    Boolean ignoreEos,
    Integer minTokens,
    Boolean skipSpecialTokens,
    Boolean spacesBetweenSpecialTokens,
    Integer truncatePromptTokens,
    Integer promptLogprobs,
    List<Integer> allowedTokenIds,
    List<String> badWords,
    Boolean echo,
    Boolean addGenerationPrompt,
    Boolean continueFinalMessage,
    Boolean addSpecialTokens,
    List<Map<String, Object>> documents,
    String chatTemplate,
    Map<String, Object> chatTemplateKwargs,
    Map<String, Object> mmProcessorKwargs,
    StructuredOutputs structuredOutputs,
    Integer priority,
    String requestId,
    List<JsonNode> logitsProcessors,
    Boolean returnTokensAsTokenIds,
    Boolean returnTokenIds,
    JsonNode cacheSalt,
    Map<String, Object> kvTransferParams,
    Map<String, Object> engineXargs)
    implements SamplingFields {

  /** A request with only {@code messages} set: every other field takes its default. */
  public static ChatCompletionRequest ofMessages(List<Map<String, Object>> messages) {
    return new ChatCompletionRequest(
        messages, null, null, null, null, null, null, null, null, null, null, null, null, null,
        null, null, null, null, null, null, null, null, null, null, null, null, null, null, null,
        null, null, null, null, null, null, null, null, null, null, null, null, null, null, null,
        null, null, null, null, null, null, null, null, null, null, null);
  }

  /** {@code stream_options}. */
  @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
  public record StreamOptions(Boolean includeUsage, Boolean continuousUsageStats) {}

  /**
   * {@code response_format}: {@code type} plus, for {@code json_schema}, the schema; for {@code
   * structural_tag}, vLLM's {@code structures} and {@code triggers} (or xgrammar's {@code format},
   * which is refused).
   */
  @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
  public record ResponseFormat(
      String type,
      JsonSchema jsonSchema,
      List<Map<String, Object>> structures,
      List<String> triggers,
      Map<String, Object> format) {
    /** A {@code text}, {@code json_object} or {@code json_schema} format. */
    public ResponseFormat(String type, JsonSchema jsonSchema) {
      this(type, jsonSchema, null, null, null);
    }
  }

  /** {@code response_format.json_schema}. */
  @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
  public record JsonSchema(
      String name, String description, Map<String, Object> schema, Boolean strict) {}

  /** One entry of {@code tools}. */
  @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
  public record Tool(String type, ToolFunction function) {}

  /** {@code tools[].function}. */
  @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
  public record ToolFunction(
      String name, String description, Map<String, Object> parameters, Boolean strict) {}
}
