package dev.troupe.gateway.preview;

import static org.apache.pekko.http.javadsl.server.Directives.get;
import static org.apache.pekko.http.javadsl.server.Directives.path;

import dev.troupe.gateway.http.ApiRoute;
import dev.troupe.protocol.cluster.TrainableModelProtocol;
import org.apache.pekko.http.javadsl.server.Route;

/** {@code GET /v1/preview/models/{id}}: the model, or 404. */
public final class GetModelRoute implements ApiRoute {
  private final PreviewContext ctx;

  public GetModelRoute(PreviewContext ctx) {
    this.ctx = ctx;
  }

  @Override
  public Route route() {
    return path(
        PreviewPaths.member("models"),
        raw ->
            get(
                () -> {
                  String id = Problems.modelId(raw);
                  return ctx.<TrainableModelProtocol.ModelReply>replyFromModel(
                      id, TrainableModelProtocol.Get::new, r -> CreateModelRoute.toResponse(r, id));
                }));
  }
}
