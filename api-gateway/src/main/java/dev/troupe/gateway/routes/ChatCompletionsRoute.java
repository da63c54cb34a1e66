package dev.troupe.gateway.routes;

import static org.apache.pekko.http.javadsl.server.Directives.onSuccess;
import static org.apache.pekko.http.javadsl.server.Directives.pathEndOrSingleSlash;
import static org.apache.pekko.http.javadsl.server.Directives.pathPrefix;
import static org.apache.pekko.http.javadsl.server.Directives.post;

import dev.troupe.gateway.chat.ChatChunkWriter;
import dev.troupe.gateway.chat.ChatPlan;
import dev.troupe.gateway.chat.ChatRequestMapper;
import dev.troupe.gateway.chat.ChatResponseFolder;
import dev.troupe.gateway.chat.GenerationStream;
import dev.troupe.gateway.chat.MigrationSettings;
import dev.troupe.gateway.http.ApiRoute;
import dev.troupe.gateway.http.ClientConnections;
import dev.troupe.gateway.http.ClientConnections.Connection;
import dev.troupe.gateway.http.JsonBodies;
import dev.troupe.gateway.http.RequestIds;
import dev.troupe.gateway.http.Stages;
import dev.troupe.gateway.metrics.ServingMetrics;
import dev.troupe.gateway.replicas.ModelCatalog;
import dev.troupe.gateway.replicas.ModelCatalog.Target;
import dev.troupe.gateway.replicas.ModelFacts;
import dev.troupe.gateway.replicas.ReplicaSelector.Destination;
import dev.troupe.gateway.replicas.ServedModel;
import dev.troupe.protocol.api.chat.ChatCompletionRequest;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.NotUsed;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.StatusCodes;
import org.apache.pekko.http.javadsl.server.PathMatchers;
import org.apache.pekko.http.javadsl.server.Route;
import org.apache.pekko.stream.KillSwitches;
import org.apache.pekko.stream.SharedKillSwitch;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.util.ByteString;

/**
 * {@code POST /v1/chat/completions} (also with a trailing slash), one step per method: parse →
 * resolve the model and its facts ({@link ModelCatalog}) → validate and convert ({@link
 * ChatRequestMapper}) → choose the replica ({@code ReplicaSelector}) → answer from its events,
 * folded into one JSON response or written as server-sent events. Errors found before the first
 * byte (validation, the worker refusing the prompt, unknown model, overload) are plain HTTP errors,
 * streams included.
 */
public final class ChatCompletionsRoute implements ApiRoute {
  /** The debug header naming the chosen replica and why ({@code RouteDecision#headerValue}). */
  public static final String ROUTE_HEADER = Generations.ROUTE_HEADER;

  private final ModelCatalog models;
  private final Generations generations;

  public ChatCompletionsRoute(ModelCatalog models) {
    this(models, new ServingMetrics(), MigrationSettings.DISABLED);
  }

  /**
   * @param metrics where finished requests and their latencies are recorded ({@code GET /metrics})
   * @param migration how a request waits for workers and moves when its worker is lost
   */
  public ChatCompletionsRoute(
      ModelCatalog models, ServingMetrics metrics, MigrationSettings migration) {
    this.models = models;
    this.generations = new Generations(models, metrics, migration);
  }

  @Override
  public Route route() {
    return pathPrefix(
        PathMatchers.segment("v1").slash("chat").slash("completions"),
        () -> pathEndOrSingleSlash(() -> post(() -> RequestIds.incoming(this::parsed))));
  }

  /** The body, its {@code request_id} echoed unless the {@code X-Request-Id} header gave one. */
  private Route parsed(Optional<String> headerId) {
    return JsonBodies.entity(
        ChatCompletionRequest.class,
        request ->
            RequestIds.echo(headerId, request.requestId(), () -> resolved(request, headerId)));
  }

  /** The model it names (a trained checkpoint runs on its base model's workers) and its facts. */
  private Route resolved(ChatCompletionRequest request, Optional<String> headerId) {
    return onSuccess(
        models.resolveTarget(request.model()),
        target ->
            onSuccess(
                models.facts(target.model()), facts -> mapped(request, headerId, target, facts)));
  }

  /** The request's own rules checked and converted to a generation. */
  private Route mapped(
      ChatCompletionRequest request, Optional<String> headerId, Target target, ModelFacts facts) {
    ChatPlan mapped = ChatRequestMapper.map(request, facts, headerId);
    ChatPlan plan =
        target.adapter() == null ? mapped : mapped.withAdapter(target.adapter(), request.model());
    String id = plan.responseId().substring("chatcmpl-".length());
    return Generations.withRequestId(id, routed(target.model(), plan, facts));
  }

  /**
   * The replica chosen (cache-aware routing tokenizes the prompt first, off this thread), then the
   * answer from it; with {@code debug-header} on, {@code X-Troupe-Route} tells which and why.
   */
  private Route routed(ServedModel model, ChatPlan plan, ModelFacts facts) {
    return onSuccess(
        models.replicas().route(model, plan.generation(), facts.maxModelLen()),
        destination -> {
          RouteHeader header = new RouteHeader(List.of(destination));
          return Generations.answer(
              connection ->
                  generations.withRouteHeader(
                      header,
                      plan.stream()
                          ? stream(model, plan, destination, header.served(0), connection)
                          : whole(model, plan, destination, header.served(0), connection)));
        });
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
      RouteHeader.Served served,
      Optional<Connection> connection) {
    long created = System.currentTimeMillis() / 1000;
    SharedKillSwitch gone = KillSwitches.shared("chat-" + plan.generation().requestId());
    CompletionStage<HttpResponse> done =
        Stages.on(
                models.system(),
                generations
                    .events(model, destination, served)
                    .via(gone.flow())
                    .runWith(
                        Sink.fold(new ChatResponseFolder(plan, created), ChatResponseFolder::add),
                        models.system()))
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
      RouteHeader.Served served,
      Optional<Connection> connection) {
    long created = System.currentTimeMillis() / 1000;
    SharedKillSwitch gone = KillSwitches.shared("chat-" + plan.generation().requestId());
    CompletionStage<HttpResponse> response =
        GenerationStream.firstEvent(
                generations.events(model, destination, served).via(gone.flow()), models.system())
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
