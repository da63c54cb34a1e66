package dev.troupe.gateway.chat;

import dev.troupe.gateway.http.ApiException;
import dev.troupe.gateway.replicas.ReplicaSelector.Attempts;
import dev.troupe.gateway.replicas.ReplicaSelector.Replica;
import dev.troupe.protocol.cluster.GenerationRequest;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Cancel;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Command;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Failed;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Generate;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationEvent;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationUpdate;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import java.util.function.Supplier;
import org.apache.pekko.NotUsed;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.actor.typed.RecipientRef;
import org.apache.pekko.http.javadsl.model.ContentType;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.MediaTypes;
import org.apache.pekko.japi.Pair;
import org.apache.pekko.japi.pf.PFBuilder;
import org.apache.pekko.stream.OverflowStrategy;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.stream.typed.javadsl.ActorSource;
import org.apache.pekko.util.ByteString;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One generation as a stream of the worker's events — one {@link GenerationUpdate} per engine step
 * with news for it, the single code path behind streaming and non-streaming answers. Materializing
 * it starts the request's {@link GenerationOwner}, which sends {@link Generate} to a reachable
 * replica, forwards its events, and resumes the request on another replica if that worker is lost;
 * the stream ends after the last update or a {@link Failed}. If it ends any other way (the client
 * went away) the owner tells the worker to {@link Cancel}; the worker also watches the owner.
 */
public final class GenerationStream {
  private static final Logger log = LoggerFactory.getLogger(GenerationStream.class);

  /**
   * Events a slow client may fall behind by before the request is failed (tokens are never
   * dropped).
   */
  private static final int BUFFER = 16_384;

  private static final AtomicLong OWNERS = new AtomicLong();
  private static final ContentType EVENT_STREAM = MediaTypes.TEXT_EVENT_STREAM.toContentType();

  private GenerationStream() {}

  /**
   * The events of {@code request} on {@code replicas}, ending with its last update or Failed.
   *
   * @param acceptTimeout how long an attempt may go unacknowledged when it cannot move
   * @param migration what happens when the worker is lost
   */
  public static Source<GenerationEvent, NotUsed> events(
      ActorSystem<?> system,
      Attempts replicas,
      GenerationRequest request,
      Duration acceptTimeout,
      MigrationSettings migration) {
    return ActorSource.<GenerationEvent>actorRef(
            e -> false, e -> Optional.empty(), BUFFER, OverflowStrategy.fail())
        .mapMaterializedValue(
            out -> {
              system.systemActorOf(
                  GenerationOwner.create(out, request, replicas, acceptTimeout, migration),
                  "generation-" + OWNERS.incrementAndGet(),
                  Props.empty());
              return NotUsed.getInstance();
            })
        .takeWhile(e -> !isLast(e), true);
  }

  /**
   * The events of {@code request} on one fixed worker, without migration (tests, tools): a worker
   * that does not acknowledge within {@code firstEventTimeout} is a 503.
   */
  public static Source<GenerationEvent, NotUsed> events(
      RecipientRef<Command> worker,
      GenerationRequest request,
      Duration firstEventTimeout,
      ActorSystem<?> system) {
    return events(
        system,
        Attempts.only(new Replica("worker", worker)),
        request,
        firstEventTimeout,
        MigrationSettings.DISABLED);
  }

  /** The event after which nothing follows: a failure, or the update carrying the usage. */
  public static boolean isLast(GenerationEvent e) {
    return e instanceof Failed || (e instanceof GenerationUpdate u && u.done());
  }

  /**
   * Runs {@code events} until its first event: a failure before anything was generated becomes an
   * {@link ApiException} (so streams answer an error status before any byte is sent); otherwise the
   * first event and the rest of the stream.
   */
  public static CompletionStage<Pair<GenerationEvent, Source<GenerationEvent, NotUsed>>> firstEvent(
      Source<GenerationEvent, NotUsed> events, ActorSystem<?> system) {
    return events
        .prefixAndTail(1)
        .runWith(Sink.head(), system)
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
