package dev.troupe.gateway.preview;

import static org.apache.pekko.http.javadsl.server.Directives.get;
import static org.apache.pekko.http.javadsl.server.Directives.onSuccess;
import static org.apache.pekko.http.javadsl.server.Directives.parameterOptional;
import static org.apache.pekko.http.javadsl.server.Directives.path;

import dev.troupe.gateway.http.ApiRoute;
import dev.troupe.gateway.http.JsonBodies;
import dev.troupe.protocol.api.preview.CursorPage;
import dev.troupe.protocol.api.preview.ModelResponse;
import dev.troupe.protocol.cluster.TrainableModelProtocol;
import org.apache.pekko.http.javadsl.server.PathMatchers;
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
        PathMatchers.segment("v1").slash("preview").slash("models"),
        () ->
            get(
                () ->
                    parameterOptional(
                        "after",
                        after ->
                            parameterOptional(
                                "limit",
                                rawLimit -> {
                                  Problems p = new Problems();
                                  int limit = Problems.limit(rawLimit, p);
                                  p.throwIfAny();
                                  return onSuccess(
                                      ctx.<TrainableModelProtocol.ModelPage>askRegistry(
                                              r ->
                                                  new TrainableModelProtocol.ListModels(
                                                      after.orElse(null), limit, r))
                                          .thenApply(
                                              page ->
                                                  CursorPage.of(
                                                      page.data().stream()
                                                          .map(CreateModelRoute::of)
                                                          .toList(),
                                                      ModelResponse::id,
                                                      page.hasMore())),
                                      JsonBodies::completeJson);
                                }))));
  }
}
