package dev.troupe.gateway.preview;

import static org.apache.pekko.http.javadsl.server.Directives.extractMaterializer;
import static org.apache.pekko.http.javadsl.server.Directives.extractRequest;
import static org.apache.pekko.http.javadsl.server.Directives.onSuccess;
import static org.apache.pekko.http.javadsl.server.Directives.optionalHeaderValueByName;
import static org.apache.pekko.http.javadsl.server.Directives.path;
import static org.apache.pekko.http.javadsl.server.Directives.post;

import dev.troupe.gateway.http.ApiException;
import dev.troupe.gateway.http.ApiRoute;
import dev.troupe.gateway.http.JsonBodies;
import dev.troupe.gateway.http.ValidationException;
import dev.troupe.protocol.api.preview.LogResponse;
import dev.troupe.protocol.cluster.TrainableModelProtocol;
import dev.troupe.protocol.cluster.TrajectoryLogProtocol;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.MediaTypes;
import org.apache.pekko.http.javadsl.server.Route;
import org.apache.pekko.http.scaladsl.model.EntityStreamSizeException;
import org.apache.pekko.stream.Materializer;
import org.apache.pekko.stream.javadsl.StreamConverters;

/**
 * {@code POST /v1/preview/models/{model_id}/log} {@code {split, trajectory_groups, model_id?}}: the
 * body is parsed as it streams in (one group tree at a time, kept as compact bytes), every problem
 * is answered at once as FastAPI's 422 {@code detail[]}, an unknown model is 404, and the reply
 * comes only after the {@code TrajectoryLog} entity has made the groups durable. An {@code
 * Idempotency-Key} header makes a retried POST safe: the groups are stored once.
 */
public final class TrajectoryLogRoute implements ApiRoute {
  /** A 64 MiB body may take a while to reach the database; the usual ask timeout is for chat. */
  private static final Duration MIN_STORE_TIMEOUT = Duration.ofSeconds(120);

  private static final Duration BODY_READ_TIMEOUT = Duration.ofSeconds(120);

  private final PreviewContext ctx;

  public TrajectoryLogRoute(PreviewContext ctx) {
    this.ctx = ctx;
  }

  @Override
  public Route route() {
    return path(
        PreviewPaths.member("models", "log"),
        raw ->
            post(
                () ->
                    optionalHeaderValueByName(
                        "Idempotency-Key",
                        key ->
                            extractMaterializer(
                                mat ->
                                    extractRequest(
                                        request ->
                                            onSuccess(
                                                log(raw, key.orElse(null), request, mat),
                                                JsonBodies::completeJson))))));
  }

  private CompletionStage<LogResponse> log(
      String rawId, String idempotencyKey, HttpRequest request, Materializer mat) {
    if (!request.entity().getContentType().mediaType().equals(MediaTypes.APPLICATION_JSON)) {
      throw ValidationException.of(
          List.of("body"),
          "Unsupported Media Type: Only 'application/json' is allowed",
          "model_attributes_type");
    }
    if (idempotencyKey != null && (idempotencyKey.isBlank() || idempotencyKey.length() > 255)) {
      throw ApiException.badRequest(
          "Idempotency-Key must be 1 to 255 characters", "Idempotency-Key");
    }
    InputStream body =
        request
            .entity()
            .getDataBytes()
            .runWith(StreamConverters.asInputStream(BODY_READ_TIMEOUT), mat);
    return CompletableFuture.supplyAsync(() -> parse(body), ctx.blockingExecutor())
        .thenCompose(parsed -> store(rawId, idempotencyKey, parsed));
  }

  private static TrajectoryLogParser.Parsed parse(InputStream body) {
    try (InputStream in = body) {
      return TrajectoryLogParser.parse(in);
    } catch (IOException e) {
      for (Throwable t = e; t != null; t = t.getCause()) {
        if (t instanceof EntityStreamSizeException size) throw size;
      }
      throw new UncheckedIOException(e);
    }
  }

  private CompletionStage<LogResponse> store(
      String rawId, String idempotencyKey, TrajectoryLogParser.Parsed parsed) {
    Problems p = new Problems();
    parsed.problems().forEach(d -> p.add(d.loc(), d.msg(), d.type()));
    if (parsed.modelId() != null && !parsed.modelId().equals(rawId)) {
      p.add(
          List.of("body", "model_id"),
          "Value error, model_id does not match the model in the path",
          "value_error");
    }
    p.throwIfAny();
    String id = Problems.modelId(rawId);
    Duration storeTimeout =
        ctx.askTimeout().compareTo(MIN_STORE_TIMEOUT) > 0 ? ctx.askTimeout() : MIN_STORE_TIMEOUT;
    return ctx.<TrainableModelProtocol.ModelReply>askModel(id, TrainableModelProtocol.Get::new)
        .thenCompose(
            model -> {
              if (!(model instanceof TrainableModelProtocol.ModelFound found))
                throw Problems.modelNotFound(id);
              long step = found.latest().step();
              return ctx.<TrajectoryLogProtocol.AppendReply>askLog(
                  id,
                  r ->
                      new TrajectoryLogProtocol.Append(
                          parsed.split(), step, parsed.groups(), parsed.stats(), idempotencyKey, r),
                  storeTimeout);
            })
        .thenApply(
            reply -> {
              if (reply instanceof TrajectoryLogProtocol.Appended a)
                return new LogResponse(
                    id,
                    a.split(),
                    a.step(),
                    a.groups(),
                    a.trajectories(),
                    a.metrics(),
                    a.duplicate());
              if (reply instanceof TrajectoryLogProtocol.AppendRejected r)
                throw ValidationException.of(
                    List.of("body"), "Value error, " + r.message(), "value_error");
              throw ApiException.overloaded(
                  "The trajectories were not stored: "
                      + ((TrajectoryLogProtocol.AppendFailed) reply).message());
            });
  }
}
