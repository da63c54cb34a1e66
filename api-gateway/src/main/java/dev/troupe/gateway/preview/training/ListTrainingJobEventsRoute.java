package dev.troupe.gateway.preview.training;

import static org.apache.pekko.http.javadsl.server.Directives.get;
import static org.apache.pekko.http.javadsl.server.Directives.onSuccess;
import static org.apache.pekko.http.javadsl.server.Directives.parameterOptional;
import static org.apache.pekko.http.javadsl.server.Directives.path;

import dev.troupe.gateway.http.ApiRoute;
import dev.troupe.gateway.http.JsonBodies;
import dev.troupe.gateway.http.ValidationException;
import dev.troupe.protocol.api.preview.CursorPage;
import dev.troupe.protocol.api.preview.training.TrainingJobEventResponse;
import dev.troupe.protocol.cluster.TrainingJobProtocol;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.pekko.http.javadsl.server.PathMatchers;
import org.apache.pekko.http.javadsl.server.Route;

/**
 * {@code GET /v1/preview/training-jobs/{id}/events?after=&limit=}: the job's events in creation
 * order as a cursor page ({@code limit} 1..100, default 20; no {@code after} = from the first).
 */
public final class ListTrainingJobEventsRoute implements ApiRoute {
  private final TrainingContext ctx;

  public ListTrainingJobEventsRoute(TrainingContext ctx) {
    this.ctx = ctx;
  }

  @Override
  public Route route() {
    return path(
        PathMatchers.segment("v1")
            .slash("preview")
            .slash("training-jobs")
            .slash(PathMatchers.segment())
            .slash("events"),
        raw ->
            get(
                () ->
                    parameterOptional(
                        "after",
                        after ->
                            parameterOptional(
                                "limit",
                                rawLimit -> {
                                  String id = GetTrainingJobRoute.jobId(raw);
                                  int limit = limit(rawLimit);
                                  return onSuccess(
                                      ctx.<TrainingJobProtocol.JobReply>askJob(
                                              id, r -> new TrainingJobProtocol.ListEvents(after.orElse(null), limit, r))
                                          .thenApply(reply -> page(reply, id)),
                                      JsonBodies::completeJson);
                                }))));
  }

  static int limit(Optional<String> raw) {
    if (raw.isEmpty()) return 20;
    int v;
    try {
      v = Integer.parseInt(raw.get().trim());
    } catch (NumberFormatException e) {
      throw ValidationException.of(
          List.of("query", "limit"), "Input should be a valid integer, unable to parse string as an integer", "int_parsing");
    }
    if (v < 1)
      throw ValidationException.of(List.of("query", "limit"), "Input should be greater than or equal to 1", "greater_than_equal");
    if (v > 100)
      throw ValidationException.of(List.of("query", "limit"), "Input should be less than or equal to 100", "less_than_equal");
    return v;
  }

  static CursorPage<TrainingJobEventResponse> page(TrainingJobProtocol.JobReply reply, String id) {
    if (!(reply instanceof TrainingJobProtocol.EventPage p)) throw GetTrainingJobRoute.notFound(id);
    return CursorPage.of(
        p.data().stream().map(ListTrainingJobEventsRoute::toResponse).toList(),
        TrainingJobEventResponse::id,
        p.hasMore());
  }

  static TrainingJobEventResponse toResponse(TrainingJobProtocol.JobEvent e) {
    Map<String, Object> data = new LinkedHashMap<>();
    if (e.type().equals(TrainingJobProtocol.TRAINING_STARTED) || e.type().equals(TrainingJobProtocol.TRAINING_ENDED)) {
      // counts are integers on the wire
      e.data().forEach((k, v) -> data.put(k, v.longValue()));
    } else {
      data.putAll(e.data());
    }
    if (e.errorMessage() != null) data.put("error_message", e.errorMessage());
    return new TrainingJobEventResponse(e.id(), e.type(), data);
  }
}
