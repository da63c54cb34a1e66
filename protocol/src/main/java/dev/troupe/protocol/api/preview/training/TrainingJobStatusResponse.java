package dev.troupe.protocol.api.preview.training;

import com.fasterxml.jackson.annotation.JsonProperty;

/**
 * {@code GET /v1/preview/training-jobs/{id}}: the id (all W&B returns) plus our own status fields.
 * Times are Unix seconds; absent ones are null.
 *
 * @param status queued, running, succeeded or failed
 * @param step the checkpoint step the job produced, once succeeded
 */
public record TrainingJobStatusResponse(
    String id,
    String object,
    @JsonProperty("model_id") String modelId,
    String status,
    Long step,
    @JsonProperty("num_sequences") Integer numSequences,
    @JsonProperty("gradient_steps") int gradientSteps,
    String error,
    @JsonProperty("created_at") long createdAt,
    @JsonProperty("started_at") Long startedAt,
    @JsonProperty("finished_at") Long finishedAt) {}
