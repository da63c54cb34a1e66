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
import dev.troupe.protocol.api.preview.training.TrainingJobSummary;
import dev.troupe.protocol.cluster.TrainingJobProtocol.Status;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import org.apache.pekko.http.javadsl.server.Route;

/**
 * {@code GET /v1/preview/training-jobs?after=&limit=&order=asc|desc&status=}: the training jobs as
 * a cursor page (creation order, or newest first with {@code order=desc}), optionally only those in
 * one status ({@code queued}, {@code running}, {@code succeeded}, {@code failed}), each with its
 * status fields and its latest gradient step's metrics ({@link TrainingJobs}).
 */
public final class ListTrainingJobsRoute implements ApiRoute {
  static final List<String> STATUSES =
      Arrays.stream(Status.values()).map(s -> s.name().toLowerCase(Locale.ROOT)).toList();

  private final TrainingJobs jobs;

  public ListTrainingJobsRoute(PreviewContext ctx) {
    this.jobs = new TrainingJobs(ctx);
  }

  @Override
  public Route route() {
    return path(
        PreviewPaths.collection("training-jobs"),
        () ->
            get(
                () ->
                    PageQuery.afterLimitOrderStatus(
                        query -> {
                          PageQuery.Checked q = query.checked(STATUSES);
                          Status status =
                              q.status() == null
                                  ? null
                                  : Status.valueOf(q.status().toUpperCase(Locale.ROOT));
                          return onSuccess(
                              jobs.list(query.afterOrNull(), q.limit(), q.descending(), status)
                                  .thenApply(
                                      page ->
                                          CursorPage.of(
                                              page.data(), TrainingJobSummary::id, page.hasMore())),
                              JsonBodies::completeJson);
                        })));
  }
}
