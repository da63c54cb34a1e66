package dev.troupe.gateway.routes;

import static org.apache.pekko.http.javadsl.server.Directives.completeWithFuture;
import static org.apache.pekko.http.javadsl.server.Directives.extractRequest;
import static org.apache.pekko.http.javadsl.server.Directives.onSuccess;
import static org.apache.pekko.http.javadsl.server.Directives.pathEndOrSingleSlash;
import static org.apache.pekko.http.javadsl.server.Directives.pathPrefix;
import static org.apache.pekko.http.javadsl.server.Directives.post;
import static org.apache.pekko.http.javadsl.server.Directives.respondWithHeader;
import static org.apache.pekko.http.javadsl.server.Directives.withoutRequestTimeout;

import dev.troupe.gateway.chat.ChatChunkWriter;
import dev.troupe.gateway.chat.ChatPlan;
import dev.troupe.gateway.chat.ChatRequestMapper;
import dev.troupe.gateway.chat.ChatResponseFolder;
import dev.troupe.gateway.chat.GenerationStream;
import dev.troupe.gateway.chat.ModelFacts;
import dev.troupe.gateway.http.ApiRoute;
import dev.troupe.gateway.http.ClientConnections;
import dev.troupe.gateway.http.ClientConnections.Connection;
import dev.troupe.gateway.http.JsonBodies;
import dev.troupe.gateway.http.RequestIds;
import dev.troupe.gateway.metrics.ServingMetrics;
import dev.troupe.gateway.workers.ModelDirectory;
import dev.troupe.gateway.workers.ModelDirectory.Destination;
import dev.troupe.gateway.workers.ServedModel;
import dev.troupe.protocol.api.chat.ChatCompletionRequest;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.NotUsed;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.StatusCodes;
import org.apache.pekko.http.javadsl.model.headers.RawHeader;
import org.apache.pekko.http.javadsl.server.PathMatchers;
import org.apache.pekko.http.javadsl.server.Route;
import org.apache.pekko.stream.KillSwitches;
import org.apache.pekko.stream.SharedKillSwitch;
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
  /** The debug header naming the chosen replica and why ({@code RouteDecision#headerValue}). */
  public static final String ROUTE_HEADER = Generations.ROUTE_HEADER;

  private final ModelDirectory models;
  private final Generations generations;

  public ChatCompletionsRoute(ModelDirectory models) {
    this(models, new ServingMetrics());
  }

  /**
   * @param metrics where finished requests and their latencies are recorded ({@code GET /metrics})
   */
  public ChatCompletionsRoute(ModelDirectory models, ServingMetrics metrics) {
    this.models = models;
    this.generations = new Generations(models, metrics);
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
   * answers from it; with {@code debug-header} on, {@code X-Troupe-Route} tells which and why. The
   * answer runs without Pekko's request timeout: the request's owner bounds the wait for a worker
   * (the ask timeout, the migration deadline), and a generation may then take as long as it needs.
   */
  private Route routed(ServedModel model, ChatPlan plan, ModelFacts facts) {
    return onSuccess(
        models.route(model, plan.generation(), facts.maxModelLen()),
        destination ->
            withoutRequestTimeout(
                () ->
                    extractRequest(
                        request -> {
                          Optional<Connection> connection = ClientConnections.of(request);
                          RouteHeader header = new RouteHeader(List.of(destination));
                          return completeWithFuture(
                              (plan.stream()
                                      ? stream(model, plan, destination, header, connection)
                                      : whole(model, plan, destination, header, connection))
                                  .thenApply(r -> header.addTo(r, generations.routeHeader())));
                        })));
  }

  /**
   * The folded answer, sent whole when the generation ends, with its own status: 200, or the
   * error's — a 503 when the request's worker was lost and no replica could continue it, never a
   * 200 with an error body. Nothing is written before, so the connection is held open however long
   * that takes ({@link ClientConnections}), and a client that closes it meanwhile cancels the
   * generation.
   */
  private CompletionStage<HttpResponse> whole(
      ServedModel model,
      ChatPlan plan,
      Destination destination,
      RouteHeader header,
      Optional<Connection> connection) {
    long created = System.currentTimeMillis() / 1000;
    SharedKillSwitch gone = KillSwitches.shared("chat-" + plan.generation().requestId());
    CompletionStage<HttpResponse> done =
        generations
            .events(model, destination, header.served(0))
            .via(gone.flow())
            .runWith(
                Sink.fold(new ChatResponseFolder(plan, created), ChatResponseFolder::add),
                models.system())
            .handle(
                (folder, error) -> {
                  if (error != null) throw GenerationStream.toApiException(error);
                  return JsonBodies.response(StatusCodes.OK, folder.response());
                });
    return Generations.held(connection, done, gone);
  }

  /**
   * Server-sent events from the first event on (errors before it are plain HTTP errors); until it
   * comes the connection is held open, and a client that leaves cancels the generation. After it, a
   * client that leaves cancels the response body, which cancels the generation.
   */
  private CompletionStage<HttpResponse> stream(
      ServedModel model,
      ChatPlan plan,
      Destination destination,
      RouteHeader header,
      Optional<Connection> connection) {
    long created = System.currentTimeMillis() / 1000;
    SharedKillSwitch gone = KillSwitches.shared("chat-" + plan.generation().requestId());
    CompletionStage<HttpResponse> response =
        GenerationStream.firstEvent(
                generations.events(model, destination, header.served(0)).via(gone.flow()),
                models.system())
            .thenApply(
                first -> {
                  ChatChunkWriter writer = new ChatChunkWriter(plan, created);
                  Source<ByteString, NotUsed> frames =
                      Source.single(first.first())
                          .concat(first.second())
                          // one update per engine step: written as it comes
                          .mapConcat(writer::onEvent);
                  return GenerationStream.eventStream(
                      frames, writer::error, writer::isDone, plan.generation().requestId());
                });
    return Generations.held(connection, response, gone);
  }
}
