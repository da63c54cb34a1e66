package dev.troupe.gateway.preview.training;

import static org.apache.pekko.http.javadsl.server.Directives.get;
import static org.apache.pekko.http.javadsl.server.Directives.onSuccess;
import static org.apache.pekko.http.javadsl.server.Directives.path;

import dev.troupe.gateway.http.ApiException;
import dev.troupe.gateway.http.ApiRoute;
import dev.troupe.gateway.http.JsonBodies;
import dev.troupe.gateway.preview.PreviewContext;
import dev.troupe.gateway.preview.PreviewPaths;
import dev.troupe.protocol.api.preview.training.TrainingJobStatusResponse;
import dev.troupe.protocol.cluster.TrainingJobProtocol;
import java.util.Locale;
import java.util.UUID;
import org.apache.pekko.http.javadsl.server.Route;

/** {@code GET /v1/preview/training-jobs/{id}}: the job's id, status, step and times, or 404. */
public final class GetTrainingJobRoute implements ApiRoute {
  private final PreviewContext ctx;

  public GetTrainingJobRoute(PreviewContext ctx) {
    this.ctx = ctx;
  }

  @Override
  public Route route() {
    return path(
        PreviewPaths.member("training-jobs"),
        raw ->
            get(
                () -> {
                  String id = jobId(raw);
                  return onSuccess(
                      ctx.<TrainingJobProtocol.JobReply>askJob(id, TrainingJobProtocol.GetJob::new)
                          .thenApply(r -> toResponse(r, id)),
                      JsonBodies::completeJson);
                }));
  }

  static TrainingJobStatusResponse toResponse(TrainingJobProtocol.JobReply reply, String id) {
    if (!(reply instanceof TrainingJobProtocol.JobView v)) throw notFound(id);
    return new TrainingJobStatusResponse(
        v.id(),
        "training_job",
        v.modelId(),
        v.status().name().toLowerCase(Locale.ROOT),
        v.step(),
        v.numSequences(),
        v.gradientSteps(),
        v.errorMessage(),
        v.createdAtMillis() / 1000,
        v.startedAtMillis() == null ? null : v.startedAtMillis() / 1000,
        v.finishedAtMillis() == null ? null : v.finishedAtMillis() / 1000);
  }

  /** A job id from the path: anything that is not a UUID names no job (404). */
  static String jobId(String raw) {
    try {
      return UUID.fromString(raw).toString();
    } catch (IllegalArgumentException e) {
      throw notFound(raw);
    }
  }

  static ApiException notFound(String id) {
    return ApiException.notFound("Training job " + id + " not found", "id");
  }
}
