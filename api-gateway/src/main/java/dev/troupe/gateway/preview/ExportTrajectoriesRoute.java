package dev.troupe.gateway.preview;

import static org.apache.pekko.http.javadsl.server.Directives.complete;
import static org.apache.pekko.http.javadsl.server.Directives.get;
import static org.apache.pekko.http.javadsl.server.Directives.onSuccess;
import static org.apache.pekko.http.javadsl.server.Directives.parameterOptional;
import static org.apache.pekko.http.javadsl.server.Directives.path;

import dev.troupe.gateway.http.ApiRoute;
import dev.troupe.protocol.cluster.TrainableModelProtocol;
import dev.troupe.protocol.cluster.TrajectoryLogProtocol;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.NotUsed;
import org.apache.pekko.http.javadsl.model.ContentType;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpCharsets;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.MediaTypes;
import org.apache.pekko.http.javadsl.server.Route;
import org.apache.pekko.japi.Pair;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.util.ByteString;

/**
 * {@code GET /v1/preview/models/{id}/trajectories/export?split=}: every logged group as JSON Lines
 * ({@code application/x-ndjson}), streamed page by page from the store: memory holds one page (at
 * most {@link #PAGE_GROUPS} groups or about {@link #PAGE_BYTES} bytes), never the whole log.
 */
public final class ExportTrajectoriesRoute implements ApiRoute {
  static final int PAGE_GROUPS = 256;
  static final long PAGE_BYTES = 4L * 1024 * 1024;
  static final ContentType JSONL =
      ContentTypes.create(
          MediaTypes.applicationWithFixedCharset("x-ndjson", HttpCharsets.UTF_8, "jsonl"));
  private static final long DONE = Long.MIN_VALUE;

  private final PreviewContext ctx;

  public ExportTrajectoriesRoute(PreviewContext ctx) {
    this.ctx = ctx;
  }

  @Override
  public Route route() {
    return path(
        PreviewPaths.member("models", "trajectories", "export"),
        raw ->
            get(
                () ->
                    parameterOptional(
                        "split",
                        split -> {
                          String id = Problems.modelId(raw);
                          return onSuccess(
                              requireModel(ctx, id),
                              ok ->
                                  complete(
                                      HttpResponse.create()
                                          .withEntity(
                                              HttpEntities.createChunked(
                                                  JSONL, lines(id, split.orElse(null))))));
                        })));
  }

  /** Pages are asked for only as the client reads: backpressure reaches the database. */
  private Source<ByteString, NotUsed> lines(String id, String split) {
    return Source.unfoldAsync(
        -1L,
        after -> {
          if (after == DONE) return CompletableFuture.completedFuture(Optional.empty());
          return ctx.<TrajectoryLogProtocol.TrajectoryPage>askLog(
                  id,
                  r -> new TrajectoryLogProtocol.ReadPage(split, after, PAGE_GROUPS, PAGE_BYTES, r),
                  ctx.askTimeout())
              .thenApply(
                  page -> {
                    List<TrajectoryLogProtocol.StoredGroup> data = page.data();
                    if (data.isEmpty()) return Optional.empty();
                    long next = page.hasMore() ? data.get(data.size() - 1).seq() : DONE;
                    return Optional.of(Pair.create(next, StoredGroups.lines(data)));
                  });
        });
  }

  /** Completes when the model exists; 404 otherwise. */
  static CompletionStage<TrainableModelProtocol.ModelFound> requireModel(
      PreviewContext ctx, String id) {
    return ctx.<TrainableModelProtocol.ModelReply>askModel(id, TrainableModelProtocol.Get::new)
        .thenApply(
            r -> {
              if (r instanceof TrainableModelProtocol.ModelFound f) return f;
              throw Problems.modelNotFound(id);
            });
  }
}
