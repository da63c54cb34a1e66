package dev.troupe.gateway.preview;

import static org.apache.pekko.http.javadsl.server.Directives.get;
import static org.apache.pekko.http.javadsl.server.Directives.onSuccess;
import static org.apache.pekko.http.javadsl.server.Directives.path;

import dev.troupe.gateway.http.ApiRoute;
import dev.troupe.gateway.http.JsonBodies;
import dev.troupe.protocol.api.preview.CursorPage;
import dev.troupe.protocol.api.preview.ModelResponse;
import dev.troupe.protocol.cluster.TrainableModelProtocol;
import org.apache.pekko.http.javadsl.server.Route;

/** {@code GET /v1/preview/models?after=&limit=}: models in creation order, cursor pages. */
public final class ListModelsRoute implements ApiRoute {
  private final PreviewContext ctx;

  public ListModelsRoute(PreviewContext ctx) {
    this.ctx = ctx;
  }

  @Override
  public Route route() {
    return path(
        PreviewPaths.collection("models"),
        () ->
            get(
                () ->
                    PageQuery.afterLimit(
                        query -> {
                          int limit = query.limit();
                          return onSuccess(
                              ctx.<TrainableModelProtocol.ModelPage>askRegistry(
                                      r ->
                                          new TrainableModelProtocol.ListModels(
                                              query.afterOrNull(), limit, r))
                                  .thenApply(ListModelsRoute::page),
                              JsonBodies::completeJson);
                        })));
  }

  private static CursorPage<ModelResponse> page(TrainableModelProtocol.ModelPage page) {
    return CursorPage.of(
        page.data().stream().map(CreateModelRoute::of).toList(), ModelResponse::id, page.hasMore());
  }
}
