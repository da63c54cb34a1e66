package dev.troupe.protocol.api.tokenize;

import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.annotation.JsonNaming;
import java.util.List;
import java.util.Map;

/**
 * vLLM's {@code POST /tokenize} body, both forms in one record: a plain {@code prompt} ({@code
 * add_special_tokens} defaults to true) or chat {@code messages} rendered with the template ({@code
 * add_generation_prompt} defaults to true, {@code add_special_tokens} to false). Exactly one of
 * {@code prompt} and {@code messages} must be set.
 */
@JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
public record TokenizeRequest(
    String model,
    String prompt,
    List<Map<String, Object>> messages,
    Boolean addSpecialTokens,
    Boolean addGenerationPrompt,
    Boolean continueFinalMessage,
    Boolean returnTokenStrs,
    String chatTemplate,
    Map<String, Object> chatTemplateKwargs,
    List<Map<String, Object>> tools,
    Map<String, Object> mmProcessorKwargs) {}
