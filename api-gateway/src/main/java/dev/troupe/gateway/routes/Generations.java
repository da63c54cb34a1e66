package dev.troupe.gateway.routes;

import static org.apache.pekko.http.javadsl.server.Directives.respondWithHeader;

import dev.troupe.gateway.chat.GenerationStream;
import dev.troupe.gateway.http.ApiException;
import dev.troupe.gateway.http.ClientConnections.Connection;
import dev.troupe.gateway.metrics.ServingMetrics;
import dev.troupe.gateway.workers.ModelDirectory;
import dev.troupe.gateway.workers.ModelDirectory.Destination;
import dev.troupe.gateway.workers.ServedModel;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationEvent;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletionStage;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import java.util.function.Supplier;
import org.apache.pekko.NotUsed;
import org.apache.pekko.http.javadsl.model.ContentType;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.MediaTypes;
import org.apache.pekko.http.javadsl.model.headers.RawHeader;
import org.apache.pekko.http.javadsl.server.Route;
import org.apache.pekko.japi.pf.PFBuilder;
import org.apache.pekko.stream.SharedKillSwitch;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.util.ByteString;

/**
 * What the generation endpoints ({@code /v1/chat/completions}, {@code /v1/completions}) share
 * between a routed request and its answer: the worker events of a generation (measured, the
 * replica's in-flight count released at the end), holding the client's connection until the answer
 * is ready, server-sent events that always end properly, and the routing debug header.
 */
final class Generations {
  private static final ContentType EVENT_STREAM = MediaTypes.TEXT_EVENT_STREAM.toContentType();

  /** The debug header naming the chosen replica and why ({@code RouteDecision#headerValue}). */
  static final String ROUTE_HEADER = "X-Troupe-Route";

  private final ModelDirectory models;
  private final ServingMetrics metrics;

  Generations(ModelDirectory models, ServingMetrics metrics) {
    this.models = models;
    this.metrics = metrics;
  }

  ModelDirectory models() {
    return models;
  }

  /**
   * The generation's events, from the routed replica and, if its worker is lost, from the replicas
   * that continue it; the routed replica's in-flight count drops at the end.
   */
  Source<GenerationEvent, NotUsed> events(ServedModel model, Destination destination) {
    return metrics.observe(
        model.name(),
        GenerationStream.events(models.replicas(model, destination), destination.request())
            .watchTermination(
                (mat, done) -> {
                  done.whenComplete((ok, error) -> destination.lease().close());
                  return mat;
                }));
  }

  /**
   * Holds the connection open until {@code response} is ready, cancelling the generation if the
   * client closes it first.
   */
  static <T> CompletionStage<T> held(
      Optional<Connection> connection, CompletionStage<T> response, SharedKillSwitch generation) {
    if (connection.isEmpty()) return response;
    connection
        .get()
        .onCloseUntil(
            response, () -> generation.abort(new CancellationException("the client went away")));
    return connection.get().holdOpenUntil(response);
  }

  /**
   * A server-sent-events response of {@code frames}: a failure after the stream opened becomes the
   * writer's error event then {@code [DONE]} (the HTTP status stays 200), and a stream that ends
   * without its last update still ends with an error event.
   *
   * @param error the error frames for a failure ({@code data: {"error":…}} and {@code [DONE]})
   * @param done whether the writer has ended the stream itself
   */
  static HttpResponse eventStream(
      Source<ByteString, NotUsed> frames,
      Function<ApiException, List<ByteString>> error,
      BooleanSupplier done,
      String requestId) {
    Supplier<List<ByteString>> unfinished =
        () ->
            done.getAsBoolean()
                ? List.of()
                : error.apply(
                    GenerationStream.toApiException(
                        new IllegalStateException(
                            "generation " + requestId + " ended without completing")));
    Source<ByteString, NotUsed> all =
        frames
            .recoverWithRetries(
                1,
                new PFBuilder<Throwable, Source<ByteString, NotUsed>>()
                    .match(
                        Throwable.class,
                        e -> Source.from(error.apply(GenerationStream.toApiException(e))))
                    .build())
            // the worker's stream always ends with its last update or Failed; if not, still end
            // the SSE properly
            .concatLazy(Source.lazySource(() -> Source.from(unfinished.get())));
    return HttpResponse.create().withEntity(HttpEntities.createChunked(EVENT_STREAM, all));
  }

  /** {@code answer} with {@code X-Troupe-Route} when the debug header is on. */
  Route withRouteHeader(String value, Route answer) {
    if (!models.router().settings().debugHeader()) return answer;
    return respondWithHeader(RawHeader.create(ROUTE_HEADER, value), () -> answer);
  }
}
