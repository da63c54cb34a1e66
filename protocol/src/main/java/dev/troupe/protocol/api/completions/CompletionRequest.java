package dev.troupe.protocol.api.completions;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.annotation.JsonNaming;
import dev.troupe.protocol.api.SamplingFields;
import dev.troupe.protocol.api.chat.ChatCompletionRequest.ResponseFormat;
import dev.troupe.protocol.api.chat.ChatCompletionRequest.StreamOptions;
import dev.troupe.protocol.api.chat.StructuredOutputs;
import java.math.BigInteger;
import java.util.List;
import java.util.Map;

/**
 * The body of {@code POST /v1/completions} (vLLM's {@code CompletionRequest}), exactly as the
 * client sent it: null means absent (or JSON null). Types are checked by Jackson; values, defaults
 * and cross-field rules are the gateway's {@code CompletionRequestMapper}'s. Unknown fields are
 * ignored, as in vLLM.
 *
 * <p>{@code prompt} is a {@link JsonNode} because it takes four shapes: a string, a list of
 * strings, a list of token ids, a list of such lists. {@code prompt_embeds}, {@code suffix} and
 * {@code best_of} are read only to be refused (400) when they would ask for something not done.
 */
@JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
public record CompletionRequest(
    String model,
    JsonNode prompt,
    JsonNode promptEmbeds,
    Integer bestOf,
    Boolean echo,
    Double frequencyPenalty,
    Map<String, Double> logitBias,
    Integer logprobs,
    Integer maxTokens,
    Integer n,
    Double presencePenalty,
    BigInteger seed,
    JsonNode stop,
    Boolean stream,
    StreamOptions streamOptions,
    String suffix,
    Double temperature,
    Double topP,
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
    List<Integer> allowedTokenIds,
    Integer promptLogprobs,
    Boolean addSpecialTokens,
    ResponseFormat responseFormat,
    StructuredOutputs structuredOutputs,
    Integer priority,
    String requestId,
    List<JsonNode> logitsProcessors,
    Boolean returnTokensAsTokenIds,
    Boolean returnTokenIds,
    JsonNode cacheSalt,
    Map<String, Object> kvTransferParams,
    Map<String, Object> engineXargs)
    implements SamplingFields {}
