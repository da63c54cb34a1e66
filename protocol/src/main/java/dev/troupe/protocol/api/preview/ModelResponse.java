package dev.troupe.protocol.api.preview;

import com.fasterxml.jackson.annotation.JsonProperty;

/** A trainable model as the preview API shows it ({@code POST/GET /v1/preview/models}). */
public record ModelResponse(
    String id,
    String entity,
    String project,
    String name,
    @JsonProperty("base_model") String baseModel,
    @JsonProperty("run_id") String runId) {}
