package dev.troupe.gateway.preview.training;

import static org.apache.pekko.http.javadsl.server.Directives.get;
import static org.apache.pekko.http.javadsl.server.Directives.onSuccess;
import static org.apache.pekko.http.javadsl.server.Directives.path;

import dev.troupe.gateway.http.ApiRoute;
import dev.troupe.gateway.http.JsonBodies;
import dev.troupe.gateway.preview.PageQuery;
import dev.troupe.gateway.preview.PreviewContext;
import dev.troupe.gateway.preview.PreviewPaths;
import dev.troupe.protocol.api.preview.CursorPage;
import dev.troupe.protocol.api.preview.training.TrainingJobEventResponse;
import dev.troupe.protocol.cluster.TrainingJobProtocol;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.pekko.http.javadsl.server.Route;

/**
 * {@code GET /v1/preview/training-jobs/{id}/events?after=&limit=}: the job's events in creation
 * order as a cursor page ({@code limit} 1..100, default 20; no {@code after} = from the first).
 */
public final class ListTrainingJobEventsRoute implements ApiRoute {
  private final PreviewContext ctx;

  public ListTrainingJobEventsRoute(PreviewContext ctx) {
    this.ctx = ctx;
  }

  @Override
  public Route route() {
    return path(
        PreviewPaths.member("training-jobs", "events"),
        raw ->
            get(
                () ->
                    PageQuery.afterLimit(
                        query -> {
                          String id = GetTrainingJobRoute.jobId(raw);
                          int limit = query.limit();
                          return onSuccess(
                              ctx.<TrainingJobProtocol.JobReply>askJob(
                                      id,
                                      r ->
                                          new TrainingJobProtocol.ListEvents(
                                              query.afterOrNull(), limit, r))
                                  .thenApply(reply -> page(reply, id)),
                              JsonBodies::completeJson);
                        })));
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
    if (e.type().equals(TrainingJobProtocol.TRAINING_STARTED)
        || e.type().equals(TrainingJobProtocol.TRAINING_ENDED)) {
      // counts are integers on the wire
      e.data().forEach((k, v) -> data.put(k, v.longValue()));
    } else {
      data.putAll(e.data());
    }
    if (e.errorMessage() != null) data.put("error_message", e.errorMessage());
    return new TrainingJobEventResponse(e.id(), e.type(), data);
  }
}
