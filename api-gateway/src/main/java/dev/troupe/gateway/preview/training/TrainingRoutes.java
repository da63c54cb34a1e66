package dev.troupe.gateway.preview.training;

import dev.troupe.gateway.http.ApiRoute;
import dev.troupe.gateway.preview.PreviewContext;
import java.util.List;

/**
 * The training-job endpoints, for one line in the gateway's composition: {@code
 * ApiRoutes.builder(settings).addAll(TrainingRoutes.all(ctx))}.
 */
public final class TrainingRoutes {
  private TrainingRoutes() {}

  public static List<ApiRoute> all(PreviewContext ctx) {
    return List.of(
        new CreateTrainingJobRoute(ctx),
        new ListTrainingJobsRoute(ctx),
        new GetTrainingJobRoute(ctx),
        new ListTrainingJobEventsRoute(ctx));
  }
}
