package dev.troupe.gateway.chat;

import dev.troupe.gateway.http.ApiException;
import dev.troupe.gateway.http.Stages;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Failed;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationEvent;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import java.util.function.Supplier;
import org.apache.pekko.NotUsed;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.http.javadsl.model.ContentType;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.MediaTypes;
import org.apache.pekko.japi.Pair;
import org.apache.pekko.japi.pf.PFBuilder;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.util.ByteString;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A generation's events ({@link GenerationOwner#events}) as HTTP: an error before the first event
 * as a plain HTTP error status ({@link #firstEvent}), a server-sent-events response whose failures
 * after the first byte become an error event ({@link #eventStream}), and the HTTP error of a
 * worker's {@link Failed} or of a stream failure ({@link #toApiException}).
 */
public final class GenerationStream {
  private static final Logger log = LoggerFactory.getLogger(GenerationStream.class);

  private static final ContentType EVENT_STREAM = MediaTypes.TEXT_EVENT_STREAM.toContentType();

  private GenerationStream() {}

  /**
   * Runs {@code events} until its first event: a failure before anything was generated becomes an
   * {@link ApiException} (so streams answer an error status before any byte is sent); otherwise the
   * first event and the rest of the stream.
   */
  public static CompletionStage<Pair<GenerationEvent, Source<GenerationEvent, NotUsed>>> firstEvent(
      Source<GenerationEvent, NotUsed> events, ActorSystem<?> system) {
    return Stages.on(system, events.prefixAndTail(1).runWith(Sink.head(), system))
        .handle(
            (pair, error) -> {
              if (error != null) throw toApiException(error);
              List<GenerationEvent> first = pair.first();
              if (first.isEmpty())
                throw ApiException.internal("The worker ended the request without an answer.");
              GenerationEvent head = first.get(0);
              if (head instanceof Failed f) throw toApiException(f);
              return Pair.create(head, pair.second());
            });
  }

  /**
   * A server-sent-events response of {@code frames}: a failure after the stream opened becomes the
   * writer's error event then {@code [DONE]} (the HTTP status stays 200), and a stream that ends
   * without its last update still ends with an error event.
   *
   * @param error the error frames for a failure ({@code data: {"error":…}} and {@code [DONE]})
   * @param done whether the writer has ended the stream itself
   */
  public static HttpResponse eventStream(
      Source<ByteString, NotUsed> frames,
      Function<ApiException, List<ByteString>> error,
      BooleanSupplier done,
      String requestId) {
    Supplier<List<ByteString>> unfinished =
        () ->
            done.getAsBoolean()
                ? List.of()
                : error.apply(
                    toApiException(
                        new IllegalStateException(
                            "generation " + requestId + " ended without completing")));
    Source<ByteString, NotUsed> all =
        frames
            .recoverWithRetries(
                1,
                new PFBuilder<Throwable, Source<ByteString, NotUsed>>()
                    .match(Throwable.class, e -> Source.from(error.apply(toApiException(e))))
                    .build())
            // the worker's stream always ends with its last update or Failed; if not, still end
            // the SSE properly
            .concatLazy(Source.lazySource(() -> Source.from(unfinished.get())));
    return HttpResponse.create().withEntity(HttpEntities.createChunked(EVENT_STREAM, all));
  }

  /** The HTTP error for a worker's {@link Failed}. */
  public static ApiException toApiException(Failed f) {
    return switch (f.kind()) {
      case BAD_REQUEST -> ApiException.badRequest(f.message(), f.param());
      case NOT_FOUND -> ApiException.notFound(f.message(), f.param() == null ? "model" : f.param());
      case OVERLOADED -> ApiException.overloaded(f.message());
      case INTERNAL -> {
        log.error("Generation {} failed in the worker: {}", f.requestId(), f.message());
        yield ApiException.internal("Internal server error");
      }
    };
  }

  /** The HTTP error for a stream failure (timeouts are 503: no worker answered in time). */
  public static ApiException toApiException(Throwable error) {
    Throwable t = error;
    while (t.getCause() != null
        && !(t instanceof ApiException)
        && !(t instanceof TimeoutException)
        && !(t instanceof CancellationException)) t = t.getCause();
    if (t instanceof ApiException api) return api;
    if (t instanceof TimeoutException)
      return ApiException.overloaded("No model worker answered in time; retry later.");
    if (t instanceof CancellationException) {
      log.debug("Generation cancelled: {}", t.getMessage());
      return ApiException.internal("The request was cancelled.");
    }
    log.error("Generation stream failed", error);
    return ApiException.internal("Internal server error");
  }
}
