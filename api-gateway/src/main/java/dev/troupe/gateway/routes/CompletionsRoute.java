package dev.troupe.gateway.routes;

import static org.apache.pekko.http.javadsl.server.Directives.completeWithFuture;
import static org.apache.pekko.http.javadsl.server.Directives.extractRequest;
import static org.apache.pekko.http.javadsl.server.Directives.onSuccess;
import static org.apache.pekko.http.javadsl.server.Directives.pathEndOrSingleSlash;
import static org.apache.pekko.http.javadsl.server.Directives.pathPrefix;
import static org.apache.pekko.http.javadsl.server.Directives.post;
import static org.apache.pekko.http.javadsl.server.Directives.respondWithHeader;
import static org.apache.pekko.http.javadsl.server.Directives.withoutRequestTimeout;

import dev.troupe.gateway.chat.GenerationStream;
import dev.troupe.gateway.chat.ModelFacts;
import dev.troupe.gateway.completions.CompletionAnswers;
import dev.troupe.gateway.completions.CompletionPlan;
import dev.troupe.gateway.completions.CompletionRequestMapper;
import dev.troupe.gateway.http.ApiRoute;
import dev.troupe.gateway.http.ClientConnections;
import dev.troupe.gateway.http.ClientConnections.Connection;
import dev.troupe.gateway.http.JsonBodies;
import dev.troupe.gateway.http.RequestIds;
import dev.troupe.gateway.metrics.ServingMetrics;
import dev.troupe.gateway.workers.ModelDirectory;
import dev.troupe.gateway.workers.ModelDirectory.Destination;
import dev.troupe.gateway.workers.ServedModel;
import dev.troupe.protocol.api.completions.CompletionRequest;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationEvent;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.NotUsed;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.headers.RawHeader;
import org.apache.pekko.http.javadsl.server.PathMatchers;
import org.apache.pekko.http.javadsl.server.Route;
import org.apache.pekko.stream.KillSwitches;
import org.apache.pekko.stream.SharedKillSwitch;
import org.apache.pekko.stream.javadsl.Source;

/**
 * {@code POST /v1/completions} (also with a trailing slash), vLLM's completions API: parse →
 * validate and convert ({@link CompletionRequestMapper}: the chat path's checks and sampling
 * mapper) → route and run one generation per prompt on the model's replicas, exactly as chat runs
 * its one ({@link Generations}) → fold them into one JSON answer or write them as server-sent
 * events ({@link CompletionAnswers}). Errors found before the first byte (validation, a worker
 * refusing any prompt, unknown model, overload) are plain HTTP errors, streams included.
 */
public final class CompletionsRoute implements ApiRoute {
  private final ModelDirectory models;
  private final Generations generations;

  public CompletionsRoute(ModelDirectory models) {
    this(models, new ServingMetrics());
  }

  /**
   * @param metrics where finished requests and their latencies are recorded ({@code GET /metrics})
   */
  public CompletionsRoute(ModelDirectory models, ServingMetrics metrics) {
    this.models = models;
    this.generations = new Generations(models, metrics);
  }

  @Override
  public Route route() {
    return pathPrefix(
        PathMatchers.segment("v1").slash("completions"),
        () ->
            pathEndOrSingleSlash(
                () ->
                    post(
                        () ->
                            RequestIds.incoming(
                                headerId ->
                                    JsonBodies.entity(
                                        CompletionRequest.class,
                                        request ->
                                            RequestIds.echo(
                                                headerId,
                                                request.requestId(),
                                                () -> resolved(request, headerId)))))));
  }

  /** The model (a trained checkpoint runs on its base model's workers), then the plan. */
  private Route resolved(CompletionRequest request, Optional<String> headerId) {
    return onSuccess(
        models.resolveChat(request.model()),
        target ->
            onSuccess(
                models.facts(target.model()),
                facts -> {
                  CompletionPlan mapped = CompletionRequestMapper.map(request, facts, headerId);
                  CompletionPlan plan =
                      target.adapter() == null
                          ? mapped
                          : mapped.withAdapter(target.adapter(), request.model());
                  String id = plan.responseId().substring("cmpl-".length());
                  Route answer = routed(target.model(), plan, facts);
                  return RequestIds.isHeaderSafe(id)
                      ? respondWithHeader(RawHeader.create(RequestIds.HEADER, id), () -> answer)
                      : answer;
                }));
  }

  /**
   * Routes every prompt's generation (each by its own cached prefix), then answers; {@code
   * X-Troupe-Route} lists the prompts' decisions in order. Without Pekko's request timeout: the
   * requests' owners bound the wait for a worker, as for chat.
   */
  private Route routed(ServedModel model, CompletionPlan plan, ModelFacts facts) {
    List<CompletableFuture<Destination>> routing = new ArrayList<>();
    for (CompletionPlan.Prompt p : plan.prompts())
      routing.add(models.route(model, p.generation(), facts.maxModelLen()).toCompletableFuture());
    CompletableFuture<List<Destination>> all =
        CompletableFuture.allOf(routing.toArray(CompletableFuture<?>[]::new))
            .thenApply(x -> routing.stream().map(CompletableFuture::join).toList())
            .whenComplete(
                (ok, error) -> {
                  // a prompt that could not be routed: release the others' places
                  if (error != null)
                    for (CompletableFuture<Destination> r : routing)
                      if (!r.isCompletedExceptionally()) r.thenAccept(d -> d.lease().close());
                });
    return onSuccess(
        all,
        destinations ->
            withoutRequestTimeout(
                () ->
                    extractRequest(
                        request -> {
                          RouteHeader header = new RouteHeader(destinations);
                          return completeWithFuture(
                              answer(
                                      model,
                                      plan,
                                      destinations,
                                      header,
                                      ClientConnections.of(request))
                                  .thenApply(r -> header.addTo(r, generations.routeHeader())));
                        })));
  }

  private CompletionStage<HttpResponse> answer(
      ServedModel model,
      CompletionPlan plan,
      List<Destination> destinations,
      RouteHeader header,
      Optional<Connection> connection) {
    SharedKillSwitch gone = KillSwitches.shared(plan.responseId());
    List<Source<GenerationEvent, NotUsed>> events = new ArrayList<>();
    for (int i = 0; i < destinations.size(); i++)
      events.add(generations.events(model, destinations.get(i), header.served(i)).via(gone.flow()));
    CompletionAnswers answers =
        new CompletionAnswers(plan, model, models, System.currentTimeMillis() / 1000);
    CompletionStage<HttpResponse> response =
        plan.stream() && !plan.wholeStream()
            ? answers.stream(events, gone)
            : answers.whole(events, gone);
    return Generations.held(
        connection,
        response.exceptionally(
            e -> {
              throw GenerationStream.toApiException(e);
            }),
        gone);
  }
}
