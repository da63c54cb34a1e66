package dev.troupe.gateway.routes;

import static org.apache.pekko.http.javadsl.server.Directives.onSuccess;
import static org.apache.pekko.http.javadsl.server.Directives.pathEndOrSingleSlash;
import static org.apache.pekko.http.javadsl.server.Directives.pathPrefix;
import static org.apache.pekko.http.javadsl.server.Directives.post;

import dev.troupe.gateway.chat.GenerationStream;
import dev.troupe.gateway.chat.MigrationSettings;
import dev.troupe.gateway.completions.CompletionAnswers;
import dev.troupe.gateway.completions.CompletionPlan;
import dev.troupe.gateway.completions.CompletionRequestMapper;
import dev.troupe.gateway.http.ApiRoute;
import dev.troupe.gateway.http.ClientConnections.Connection;
import dev.troupe.gateway.http.JsonBodies;
import dev.troupe.gateway.http.RequestIds;
import dev.troupe.gateway.metrics.ServingMetrics;
import dev.troupe.gateway.replicas.ModelCatalog;
import dev.troupe.gateway.replicas.ModelCatalog.Target;
import dev.troupe.gateway.replicas.ModelFacts;
import dev.troupe.gateway.replicas.ReplicaSelector.Destination;
import dev.troupe.gateway.replicas.ServedModel;
import dev.troupe.protocol.api.completions.CompletionRequest;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationEvent;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.NotUsed;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.server.PathMatchers;
import org.apache.pekko.http.javadsl.server.Route;
import org.apache.pekko.stream.KillSwitches;
import org.apache.pekko.stream.SharedKillSwitch;
import org.apache.pekko.stream.javadsl.Source;

/**
 * {@code POST /v1/completions} (also with a trailing slash), vLLM's completions API, one step per
 * method: parse → resolve the model → validate and convert ({@link CompletionRequestMapper}: the
 * chat path's checks and sampling mapper) → route and run one generation per prompt on the model's
 * replicas, exactly as chat runs its one ({@link Generations}) → fold them into one JSON answer or
 * write them as server-sent events ({@link CompletionAnswers}). Errors found before the first byte
 * (validation, a worker refusing any prompt, unknown model, overload) are plain HTTP errors,
 * streams included.
 */
public final class CompletionsRoute implements ApiRoute {
  private final ModelCatalog models;
  private final Generations generations;

  public CompletionsRoute(ModelCatalog models) {
    this(models, new ServingMetrics(), MigrationSettings.DISABLED);
  }

  /**
   * @param metrics where finished requests and their latencies are recorded ({@code GET /metrics})
   * @param migration what happens to a request whose worker is lost
   */
  public CompletionsRoute(
      ModelCatalog models, ServingMetrics metrics, MigrationSettings migration) {
    this.models = models;
    this.generations = new Generations(models, metrics, migration);
  }

  @Override
  public Route route() {
    return pathPrefix(
        PathMatchers.segment("v1").slash("completions"),
        () -> pathEndOrSingleSlash(() -> post(() -> RequestIds.incoming(this::parsed))));
  }

  /** The body, its {@code request_id} echoed unless the {@code X-Request-Id} header gave one. */
  private Route parsed(Optional<String> headerId) {
    return JsonBodies.entity(
        CompletionRequest.class,
        request ->
            RequestIds.echo(headerId, request.requestId(), () -> resolved(request, headerId)));
  }

  /** The model it names (a trained checkpoint runs on its base model's workers) and its facts. */
  private Route resolved(CompletionRequest request, Optional<String> headerId) {
    return onSuccess(
        models.resolveTarget(request.model()),
        target ->
            onSuccess(
                models.facts(target.model()), facts -> mapped(request, headerId, target, facts)));
  }

  /** The request's own rules checked and converted to one generation per prompt. */
  private Route mapped(
      CompletionRequest request, Optional<String> headerId, Target target, ModelFacts facts) {
    CompletionPlan mapped = CompletionRequestMapper.map(request, facts, headerId);
    CompletionPlan plan =
        target.adapter() == null ? mapped : mapped.withAdapter(target.adapter(), request.model());
    String id = plan.responseId().substring("cmpl-".length());
    return Generations.withRequestId(id, routed(target.model(), plan, facts));
  }

  /**
   * Every prompt's generation routed (each by its own cached prefix), then the answer; {@code
   * X-Troupe-Route} lists the prompts' decisions in order.
   */
  private Route routed(ServedModel model, CompletionPlan plan, ModelFacts facts) {
    return onSuccess(
        destinations(model, plan, facts),
        destinations -> {
          RouteHeader header = new RouteHeader(destinations);
          return Generations.answer(
              connection ->
                  generations.withRouteHeader(
                      header, answer(model, plan, destinations, header, connection)));
        });
  }

  /** One routing decision per prompt; when one fails, the others' places are released. */
  private CompletableFuture<List<Destination>> destinations(
      ServedModel model, CompletionPlan plan, ModelFacts facts) {
    List<CompletableFuture<Destination>> routing = new ArrayList<>();
    for (CompletionPlan.Prompt p : plan.prompts())
      routing.add(
          models
              .replicas()
              .route(model, p.generation(), facts.maxModelLen(), plan.echo())
              .toCompletableFuture());
    return CompletableFuture.allOf(routing.toArray(CompletableFuture<?>[]::new))
        .thenApply(x -> routing.stream().map(CompletableFuture::join).toList())
        .whenComplete(
            (ok, error) -> {
              if (error != null)
                for (CompletableFuture<Destination> r : routing)
                  if (!r.isCompletedExceptionally()) r.thenAccept(d -> d.lease().close());
            });
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
