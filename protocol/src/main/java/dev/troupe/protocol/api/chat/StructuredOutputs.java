package dev.troupe.protocol.api.chat;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.annotation.JsonNaming;
import java.util.List;

/**
 * {@code structured_outputs} of a chat request (vLLM v0.11's StructuredOutputsParams). {@code json}
 * may be a schema object or a JSON string; at most one of json, regex, choice, grammar, json_object
 * and structural_tag may be set. {@code _backend}/{@code _backend_was_auto} are engine-internal in
 * vLLM and accepted only to be ignored.
 */
@JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
public record StructuredOutputs(
    JsonNode json,
    String regex,
    List<String> choice,
    String grammar,
    Boolean jsonObject,
    Boolean disableFallback,
    Boolean disableAnyWhitespace,
    Boolean disableAdditionalProperties,
    String whitespacePattern,
    String structuralTag,
    @JsonProperty("_backend") String backend,
    @JsonProperty("_backend_was_auto") Boolean backendWasAuto) {}
