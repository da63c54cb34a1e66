package dev.troupe.protocol.api.preview;

import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.Map;

/**
 * Reply of {@code POST /v1/preview/models/{id}/log}, sent once the groups are durable: counts, the
 * checkpoint step the metrics went to, the split's metrics there, and whether this was a repeat of
 * an earlier request with the same {@code Idempotency-Key} (nothing stored again).
 */
public record LogResponse(
    @JsonProperty("model_id") String modelId,
    String split,
    long step,
    @JsonProperty("num_groups") int numGroups,
    @JsonProperty("num_trajectories") int numTrajectories,
    Map<String, Double> metrics,
    boolean duplicate) {
  public LogResponse {
    metrics = Map.copyOf(metrics);
  }
}
