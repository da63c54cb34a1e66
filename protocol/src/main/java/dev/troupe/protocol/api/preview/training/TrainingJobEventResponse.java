package dev.troupe.protocol.api.preview.training;

import java.util.Map;

/**
 * One job event: {@code type} is training_started ({@code data.num_sequences}), gradient_step
 * ({@code data} = the step's metrics), training_ended or training_failed ({@code
 * data.error_message}).
 */
public record TrainingJobEventResponse(String id, String type, Map<String, Object> data) {
  public TrainingJobEventResponse {
    data = Map.copyOf(data);
  }
}
