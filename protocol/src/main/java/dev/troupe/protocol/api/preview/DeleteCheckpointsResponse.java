package dev.troupe.protocol.api.preview;

import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.List;

/** Reply of {@code DELETE /v1/preview/models/{id}/checkpoints}. */
public record DeleteCheckpointsResponse(
    @JsonProperty("deleted_count") int deletedCount,
    @JsonProperty("not_found_steps") List<Long> notFoundSteps) {
  public DeleteCheckpointsResponse {
    notFoundSteps = List.copyOf(notFoundSteps);
  }
}
