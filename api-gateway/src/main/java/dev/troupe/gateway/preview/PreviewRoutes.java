package dev.troupe.gateway.preview;

import dev.troupe.gateway.http.ApiRoute;
import java.util.List;

/**
 * Every preview data endpoint (models, checkpoints, trajectory log and reads), for one line in the
 * gateway's composition: {@code ApiRoutes.builder(settings).addAll(PreviewRoutes.all(ctx))}. The
 * training-job routes live in {@code preview.training}.
 */
public final class PreviewRoutes {
  private PreviewRoutes() {}

  public static List<ApiRoute> all(PreviewContext ctx) {
    return List.of(
        new CreateModelRoute(ctx),
        new ListModelsRoute(ctx),
        new GetModelRoute(ctx),
        new DeleteModelRoute(ctx),
        new ListCheckpointsRoute(ctx),
        new DeleteCheckpointsRoute(ctx),
        new TrajectoryLogRoute(ctx),
        new ExportTrajectoriesRoute(ctx),
        new ListTrajectoriesRoute(ctx));
  }
}
