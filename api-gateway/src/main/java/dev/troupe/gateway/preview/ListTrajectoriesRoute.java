package dev.troupe.gateway.preview;

import static org.apache.pekko.http.javadsl.server.Directives.complete;
import static org.apache.pekko.http.javadsl.server.Directives.get;
import static org.apache.pekko.http.javadsl.server.Directives.onSuccess;
import static org.apache.pekko.http.javadsl.server.Directives.parameterOptional;
import static org.apache.pekko.http.javadsl.server.Directives.path;

import dev.troupe.gateway.http.ApiRoute;
import dev.troupe.protocol.cluster.TrajectoryLogProtocol;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.server.Route;
import org.apache.pekko.util.ByteString;

/**
 * {@code GET /v1/preview/models/{id}/trajectories?split=&after=&limit=}: logged groups in log
 * order, cursor pages (ids {@code tg_<n>}); a page also stops at about 16 MiB.
 */
public final class ListTrajectoriesRoute implements ApiRoute {
  static final long PAGE_MAX_BYTES = 16L * 1024 * 1024;

  private final PreviewContext ctx;

  public ListTrajectoriesRoute(PreviewContext ctx) {
    this.ctx = ctx;
  }

  @Override
  public Route route() {
    return path(
        PreviewPaths.member("models", "trajectories"),
        raw ->
            get(
                () ->
                    parameterOptional(
                        "split",
                        split ->
                            PageQuery.afterLimit(
                                query -> {
                                  String id = Problems.modelId(raw);
                                  Problems p = new Problems();
                                  int limit = query.limit(p);
                                  long afterSeq = StoredGroups.afterSeq(query.after(), p);
                                  p.throwIfAny();
                                  return onSuccess(
                                      read(id, split.orElse(null), afterSeq, limit),
                                      body ->
                                          complete(
                                              HttpResponse.create()
                                                  .withEntity(
                                                      HttpEntities.create(
                                                          ContentTypes.APPLICATION_JSON, body))));
                                }))));
  }

  private CompletionStage<ByteString> read(String id, String split, long afterSeq, int limit) {
    return ExportTrajectoriesRoute.requireModel(ctx, id)
        .thenCompose(
            ok ->
                ctx.<TrajectoryLogProtocol.TrajectoryPage>askLog(
                    id,
                    r ->
                        new TrajectoryLogProtocol.ReadPage(
                            split, afterSeq, limit, PAGE_MAX_BYTES, r),
                    ctx.askTimeout()))
        .thenApply(page -> StoredGroups.page(page.data(), page.hasMore()));
  }
}
