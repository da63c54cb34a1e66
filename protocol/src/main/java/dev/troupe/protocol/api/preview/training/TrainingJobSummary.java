package dev.troupe.protocol.api.preview.training;

import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.Map;

/**
 * One job of {@code GET /v1/preview/training-jobs}: its status ({@link TrainingJobStatusResponse}'s
 * fields) and the metrics of its latest gradient step ({@code loss}, {@code reward}, {@code
 * grad_norm}, {@code tokens_per_second}, ...; empty before the first step).
 *
 * @param status queued, running, succeeded or failed
 */
public record TrainingJobSummary(
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
    @JsonProperty("finished_at") Long finishedAt,
    @JsonProperty("latest_metrics") Map<String, Double> latestMetrics) {
  public TrainingJobSummary {
    latestMetrics = Map.copyOf(latestMetrics);
  }

  /** {@code status} with the latest step's metrics. */
  public static TrainingJobSummary of(TrainingJobStatusResponse s, Map<String, Double> latest) {
    return new TrainingJobSummary(
        s.id(),
        "training_job",
        s.modelId(),
        s.status(),
        s.step(),
        s.numSequences(),
        s.gradientSteps(),
        s.error(),
        s.createdAt(),
        s.startedAt(),
        s.finishedAt(),
        latest);
  }
}
