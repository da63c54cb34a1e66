package dev.troupe.gateway.routes;

import static org.apache.pekko.http.javadsl.server.Directives.completeWithFuture;
import static org.apache.pekko.http.javadsl.server.Directives.onSuccess;
import static org.apache.pekko.http.javadsl.server.Directives.pathEndOrSingleSlash;
import static org.apache.pekko.http.javadsl.server.Directives.pathPrefix;
import static org.apache.pekko.http.javadsl.server.Directives.post;
import static org.apache.pekko.http.javadsl.server.Directives.respondWithHeader;

import dev.troupe.gateway.chat.ChatChunkWriter;
import dev.troupe.gateway.chat.ChatPlan;
import dev.troupe.gateway.chat.ChatRequestMapper;
import dev.troupe.gateway.chat.ChatResponseFolder;
import dev.troupe.gateway.chat.GenerationStream;
import dev.troupe.gateway.chat.ModelFacts;
import dev.troupe.gateway.http.ApiRoute;
import dev.troupe.gateway.http.JsonBodies;
import dev.troupe.gateway.http.RequestIds;
import dev.troupe.gateway.metrics.ServingMetrics;
import dev.troupe.gateway.workers.ModelDirectory;
import dev.troupe.gateway.workers.ModelDirectory.Destination;
import dev.troupe.gateway.workers.ServedModel;
import dev.troupe.protocol.api.chat.ChatCompletionRequest;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationEvent;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.NotUsed;
import org.apache.pekko.actor.Cancellable;
import org.apache.pekko.http.javadsl.model.ContentType;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.HttpEntity;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.MediaTypes;
import org.apache.pekko.http.javadsl.model.StatusCodes;
import org.apache.pekko.http.javadsl.model.headers.RawHeader;
import org.apache.pekko.http.javadsl.server.PathMatchers;
import org.apache.pekko.http.javadsl.server.Route;
import org.apache.pekko.japi.Pair;
import org.apache.pekko.japi.pf.PFBuilder;
import org.apache.pekko.stream.KillSwitches;
import org.apache.pekko.stream.UniqueKillSwitch;
import org.apache.pekko.stream.javadsl.Keep;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.util.ByteString;

/**
 * {@code POST /v1/chat/completions} (also with a trailing slash): parse → validate and convert
 * ({@link ChatRequestMapper}) → ask a worker replica → map its events, folded into one JSON
 * response or written as server-sent events. Errors found before the first byte (validation, the
 * worker refusing the prompt, unknown model, overload) are plain HTTP errors, streams included.
 */
public final class ChatCompletionsRoute implements ApiRoute {
  private static final ContentType EVENT_STREAM = MediaTypes.TEXT_EVENT_STREAM.toContentType();

  private static final ByteString SPACE = ByteString.fromString(" ");

  /** The debug header naming the chosen replica and why ({@code RouteDecision#headerValue}). */
  public static final String ROUTE_HEADER = "X-Troupe-Route";

  private final ModelDirectory models;
  private final Duration heartbeat;
  private final ServingMetrics metrics;

  public ChatCompletionsRoute(ModelDirectory models) {
    this(models, Duration.ofSeconds(5));
  }

  public ChatCompletionsRoute(ModelDirectory models, Duration heartbeat) {
    this(models, heartbeat, new ServingMetrics());
  }

  /**
   * @param heartbeat how long a non-streaming answer may take before its status is committed and
   *     whitespace keeps the connection checked
   * @param metrics where finished requests and their latencies are recorded ({@code GET /metrics})
   */
  public ChatCompletionsRoute(ModelDirectory models, Duration heartbeat, ServingMetrics metrics) {
    this.models = models;
    this.heartbeat = heartbeat;
    this.metrics = metrics;
  }

  @Override
  public Route route() {
    return pathPrefix(
        PathMatchers.segment("v1").slash("chat").slash("completions"),
        () ->
            pathEndOrSingleSlash(
                () ->
                    post(
                        () ->
                            RequestIds.incoming(
                                headerId ->
                                    JsonBodies.entity(
                                        ChatCompletionRequest.class,
                                        request ->
                                            RequestIds.echo(
                                                headerId,
                                                request.requestId(),
                                                () ->
                                                    // The model may name a trained checkpoint: it
                                                    // runs on
                                                    // its base model's workers.
                                                    onSuccess(
                                                        models.resolveChat(request.model()),
                                                        target -> {
                                                          ServedModel model = target.model();
                                                          return onSuccess(
                                                              models.facts(model),
                                                              facts -> {
                                                                ChatPlan mapped =
                                                                    ChatRequestMapper.map(
                                                                        request, facts, headerId);
                                                                ChatPlan plan =
                                                                    target.adapter() == null
                                                                        ? mapped
                                                                        : mapped.withAdapter(
                                                                            target.adapter(),
                                                                            request.model());
                                                                String id =
                                                                    plan.responseId()
                                                                        .substring(
                                                                            "chatcmpl-".length());
                                                                Route answer =
                                                                    routed(model, plan, facts);
                                                                // A body request_id may hold
                                                                // characters a
                                                                // header cannot; it stays in the
                                                                // body then.
                                                                return RequestIds.isHeaderSafe(id)
                                                                    ? respondWithHeader(
                                                                        RawHeader.create(
                                                                            RequestIds.HEADER, id),
                                                                        () -> answer)
                                                                    : answer;
                                                              });
                                                        })))))));
  }

  /**
   * Chooses the replica (cache-aware routing tokenizes the prompt first, off this thread), then
   * answers from it; with {@code debug-header} on, {@code X-Troupe-Route} tells which and why.
   */
  private Route routed(ServedModel model, ChatPlan plan, ModelFacts facts) {
    return onSuccess(
        models.route(model, plan.generation(), facts.maxModelLen()),
        destination -> {
          Route answer =
              completeWithFuture(
                  plan.stream()
                      ? stream(model, plan, destination)
                      : whole(model, plan, destination));
          if (!models.router().settings().debugHeader()) return answer;
          return respondWithHeader(
              RawHeader.create(ROUTE_HEADER, destination.decision().headerValue()), () -> answer);
        });
  }

  /** The generation's events from its replica; the replica's in-flight count drops at the end. */
  private Source<GenerationEvent, NotUsed> events(ServedModel model, Destination destination) {
    return metrics.observe(
        model.name(),
        GenerationStream.events(destination.worker(), destination.request(), models.askTimeout())
            .watchTermination(
                (mat, done) -> {
                  done.whenComplete((ok, error) -> destination.lease().close());
                  return mat;
                }));
  }

  /**
   * The folded answer. If it is ready within {@link #heartbeat} it is a plain response with its own
   * status. Otherwise the 200 status is committed and the body starts with a space per heartbeat
   * (JSON allows leading whitespace): writing them is how a client that went away is noticed, and
   * its request cancelled, instead of generating to the end for nobody.
   */
  private CompletionStage<HttpResponse> whole(
      ServedModel model, ChatPlan plan, Destination destination) {
    long created = System.currentTimeMillis() / 1000;
    Pair<UniqueKillSwitch, CompletionStage<ChatResponseFolder>> run =
        events(model, destination)
            .viaMat(KillSwitches.single(), Keep.right())
            .toMat(
                Sink.fold(new ChatResponseFolder(plan, created), ChatResponseFolder::add),
                Keep.both())
            .run(models.system());
    CompletableFuture<HttpResponse> done =
        run.second()
            .handle(
                (folder, error) -> {
                  if (error != null) throw GenerationStream.toApiException(error);
                  return JsonBodies.response(StatusCodes.OK, folder.response());
                })
            .toCompletableFuture();
    CompletableFuture<HttpResponse> answer = new CompletableFuture<>();
    Cancellable timer =
        models
            .system()
            .scheduler()
            .scheduleOnce(
                heartbeat,
                () -> answer.complete(heartbeating(done, run.first())),
                models.system().executionContext());
    done.whenComplete(
        (response, error) -> {
          timer.cancel();
          if (error != null) answer.completeExceptionally(error);
          else answer.complete(response);
        });
    return answer;
  }

  private HttpResponse heartbeating(
      CompletableFuture<HttpResponse> done, UniqueKillSwitch generation) {
    CompletionStage<ByteString> json =
        done.handle(
            (response, error) ->
                error == null
                    ? ((HttpEntity.Strict) response.entity()).getData()
                    // Too late for an error status: the body is the error object.
                    : ByteString.fromArray(
                        JsonBodies.bytes(GenerationStream.toApiException(error).body())));
    Source<ByteString, NotUsed> body =
        Source.completionStage(json)
            .keepAlive(heartbeat, () -> SPACE)
            .watchTermination(
                (mat, terminated) -> {
                  terminated.whenComplete(
                      (ok, error) -> {
                        if (!done.isDone())
                          generation.abort(new CancellationException("the client went away"));
                      });
                  return mat;
                });
    return HttpResponse.create()
        .withEntity(HttpEntities.createChunked(ContentTypes.APPLICATION_JSON, body));
  }

  private CompletionStage<HttpResponse> stream(
      ServedModel model, ChatPlan plan, Destination destination) {
    long created = System.currentTimeMillis() / 1000;
    return GenerationStream.firstEvent(events(model, destination), models.system())
        .thenApply(
            first -> {
              ChatChunkWriter writer = new ChatChunkWriter(plan, created);
              Source<ByteString, NotUsed> frames =
                  Source.single(first.first())
                      .concat(first.second())
                      // one update per engine step: written as it comes
                      .mapConcat(writer::onEvent)
                      // A failure after the stream opened is an error event, then [DONE] (HTTP
                      // status stays 200).
                      .recoverWithRetries(
                          1,
                          new PFBuilder<Throwable, Source<ByteString, NotUsed>>()
                              .match(
                                  Throwable.class,
                                  e ->
                                      Source.from(writer.error(GenerationStream.toApiException(e))))
                              .build())
                      // The worker's stream always ends with its last update or Failed; if not,
                      // still end the SSE properly.
                      .concatLazy(
                          Source.lazySource(
                              () ->
                                  Source.from(
                                      writer.isDone()
                                          ? List.<ByteString>of()
                                          : writer.error(
                                              GenerationStream.toApiException(
                                                  new IllegalStateException(
                                                      "generation "
                                                          + plan.generation().requestId()
                                                          + " ended without completing"))))));
              return HttpResponse.create()
                  .withEntity(HttpEntities.createChunked(EVENT_STREAM, frames));
            });
  }
}
