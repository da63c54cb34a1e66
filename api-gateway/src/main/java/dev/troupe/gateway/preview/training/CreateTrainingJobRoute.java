package dev.troupe.gateway.preview.training;

import static org.apache.pekko.http.javadsl.server.Directives.onSuccess;
import static org.apache.pekko.http.javadsl.server.Directives.path;
import static org.apache.pekko.http.javadsl.server.Directives.post;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.gateway.http.ApiException;
import dev.troupe.gateway.http.ApiRoute;
import dev.troupe.gateway.http.JsonBodies;
import dev.troupe.gateway.preview.PreviewContext;
import dev.troupe.gateway.preview.PreviewPaths;
import dev.troupe.protocol.api.preview.training.TrainingJobResponse;
import dev.troupe.protocol.cluster.TrainableModelProtocol;
import dev.troupe.protocol.cluster.TrainingJobIndexProtocol;
import dev.troupe.protocol.cluster.TrainingJobProtocol;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.http.javadsl.server.Route;

/**
 * {@code POST /v1/preview/training-jobs} {@code {model_id, trajectory_groups, experimental_config}}
 * → {@code {id}}, answered only once the job is durably recorded (and listed: {@link
 * ListTrainingJobsRoute}). 422 {@code detail[]} for an invalid body, 404 for an unknown model.
 */
public final class CreateTrainingJobRoute implements ApiRoute {
  private final PreviewContext ctx;

  public CreateTrainingJobRoute(PreviewContext ctx) {
    this.ctx = ctx;
  }

  @Override
  public Route route() {
    return path(
        PreviewPaths.collection("training-jobs"),
        () ->
            post(
                () ->
                    JsonBodies.entityOrDetail(
                        JsonNode.class,
                        body ->
                            onSuccess(
                                create(TrainingJobRequestParser.parse(body)),
                                JsonBodies::completeJson))));
  }

  private CompletionStage<TrainingJobResponse> create(TrainingJobRequestParser.Parsed p) {
    if (p.modelId() == null) return CompletableFuture.failedFuture(notFound(p.rawModelId()));
    String jobId = UUID.randomUUID().toString();
    return ctx.<TrainableModelProtocol.ModelReply>askModel(
            p.modelId(), TrainableModelProtocol.Get::new)
        .thenCompose(
            model -> {
              if (!(model instanceof TrainableModelProtocol.ModelFound))
                throw notFound(p.modelId());
              // Listed before it exists, so every job that exists is listed (a job whose
              // submission fails is dropped from the list later: TrainingJobs).
              return ctx.<TrainingJobIndexProtocol.Added>askJobIndex(
                  r ->
                      new TrainingJobIndexProtocol.Add(
                          jobId, p.modelId(), System.currentTimeMillis(), r));
            })
        .thenCompose(
            listed ->
                ctx.<TrainingJobProtocol.SubmitReply>askJob(
                    jobId,
                    r -> new TrainingJobProtocol.Submit(p.modelId(), p.groups(), p.config(), r)))
        .thenApply(
            reply -> {
              if (reply instanceof TrainingJobProtocol.Submitted s)
                return new TrainingJobResponse(s.jobId());
              throw ApiException.internal(((TrainingJobProtocol.SubmitRejected) reply).message());
            });
  }

  static ApiException notFound(String id) {
    return ApiException.notFound("Model " + id + " not found", "model_id");
  }
}
