package dev.troupe.protocol.api.preview;

import com.fasterxml.jackson.annotation.JsonProperty;

/** Reply of {@code DELETE /v1/preview/models/{id}}; there is no external run to delete. */
public record DeleteModelResponse(
    @JsonProperty("model_id") String modelId,
    @JsonProperty("deleted_checkpoints") int deletedCheckpoints,
    @JsonProperty("deleted_run") boolean deletedRun) {}
