package dev.troupe.protocol.api.preview;

import java.util.Map;

/** One checkpoint of a model: step 0 is the base model; metrics such as {@code val/reward}. */
public record CheckpointResponse(String id, long step, Map<String, Double> metrics) {
  public CheckpointResponse {
    metrics = Map.copyOf(metrics);
  }
}
