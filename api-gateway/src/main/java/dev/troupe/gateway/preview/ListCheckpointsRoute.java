package dev.troupe.gateway.preview;

import static org.apache.pekko.http.javadsl.server.Directives.get;
import static org.apache.pekko.http.javadsl.server.Directives.path;

import dev.troupe.gateway.http.ApiRoute;
import dev.troupe.protocol.api.preview.CheckpointResponse;
import dev.troupe.protocol.api.preview.CursorPage;
import dev.troupe.protocol.cluster.TrainableModelProtocol;
import org.apache.pekko.http.javadsl.server.Route;

/**
 * {@code GET /v1/preview/models/{id}/checkpoints?after=&limit=&order=asc|desc}: checkpoints by step
 * ({@code {id, step, metrics}}); ART's {@code get_step()} asks {@code limit=1&order=desc}.
 */
public final class ListCheckpointsRoute implements ApiRoute {
  private final PreviewContext ctx;

  public ListCheckpointsRoute(PreviewContext ctx) {
    this.ctx = ctx;
  }

  @Override
  public Route route() {
    return path(
        PreviewPaths.member("models", "checkpoints"),
        raw ->
            get(
                () ->
                    PageQuery.afterLimitOrder(
                        query -> {
                          String id = Problems.modelId(raw);
                          Problems p = new Problems();
                          int limit = query.limit(p);
                          boolean descending = query.descending(p);
                          p.throwIfAny();
                          return ctx.<TrainableModelProtocol.CheckpointsReply>replyFromModel(
                              id,
                              r ->
                                  new TrainableModelProtocol.ListCheckpoints(
                                      query.afterOrNull(), limit, descending, r),
                              reply -> page(reply, id));
                        })));
  }

  private static CursorPage<CheckpointResponse> page(
      TrainableModelProtocol.CheckpointsReply reply, String id) {
    if (!(reply instanceof TrainableModelProtocol.CheckpointPage page))
      throw Problems.modelNotFound(id);
    return CursorPage.of(
        page.data().stream()
            .map(c -> new CheckpointResponse(c.id(), c.step(), c.metrics()))
            .toList(),
        CheckpointResponse::id,
        page.hasMore());
  }
}
