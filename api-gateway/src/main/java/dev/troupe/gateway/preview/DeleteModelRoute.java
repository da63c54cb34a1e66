package dev.troupe.gateway.preview;

import static org.apache.pekko.http.javadsl.server.Directives.delete;
import static org.apache.pekko.http.javadsl.server.Directives.onSuccess;
import static org.apache.pekko.http.javadsl.server.Directives.path;

import dev.troupe.gateway.http.ApiRoute;
import dev.troupe.gateway.http.JsonBodies;
import dev.troupe.protocol.api.preview.DeleteModelResponse;
import dev.troupe.protocol.cluster.TrainableModelProtocol;
import dev.troupe.protocol.cluster.TrajectoryLogProtocol;
import org.apache.pekko.http.javadsl.server.Route;

/**
 * {@code DELETE /v1/preview/models/{id}}: deletes the model and its checkpoints, frees its name in
 * the registry and deletes its logged trajectories. 404 when there is no such model.
 */
public final class DeleteModelRoute implements ApiRoute {
  private final PreviewContext ctx;

  public DeleteModelRoute(PreviewContext ctx) {
    this.ctx = ctx;
  }

  @Override
  public Route route() {
    return path(
        PreviewPaths.member("models"),
        raw ->
            delete(
                () -> {
                  String id = Problems.modelId(raw);
                  return onSuccess(
                      ctx.<TrainableModelProtocol.DeleteReply>askModel(
                              id, TrainableModelProtocol.Delete::new)
                          .thenCompose(
                              reply -> {
                                int checkpoints =
                                    reply instanceof TrainableModelProtocol.ModelDeleted d
                                        ? d.deletedCheckpoints()
                                        : -1;
                                // Unregister and purge also when nothing was deleted: repairs a
                                // delete that stopped between the steps.
                                return ctx.<TrainableModelProtocol.Unregistered>askRegistry(
                                        r -> new TrainableModelProtocol.Unregister(id, r))
                                    .thenCompose(
                                        u ->
                                            ctx.<TrajectoryLogProtocol.Purged>askLog(
                                                id,
                                                TrajectoryLogProtocol.Purge::new,
                                                ctx.askTimeout()))
                                    .thenApply(
                                        u -> {
                                          if (checkpoints < 0) throw Problems.modelNotFound(id);
                                          return new DeleteModelResponse(id, checkpoints, false);
                                        });
                              }),
                      JsonBodies::completeJson);
                }));
  }
}
