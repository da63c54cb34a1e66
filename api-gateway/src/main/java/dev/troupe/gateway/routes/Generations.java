package dev.troupe.gateway.routes;

import static org.apache.pekko.http.javadsl.server.Directives.completeWithFuture;
import static org.apache.pekko.http.javadsl.server.Directives.extractRequest;
import static org.apache.pekko.http.javadsl.server.Directives.respondWithHeader;
import static org.apache.pekko.http.javadsl.server.Directives.withoutRequestTimeout;

import dev.troupe.gateway.chat.GenerationOwner;
import dev.troupe.gateway.chat.GenerationStream;
import dev.troupe.gateway.chat.MigrationSettings;
import dev.troupe.gateway.chat.PrefillListener;
import dev.troupe.gateway.http.ClientConnections;
import dev.troupe.gateway.http.ClientConnections.Connection;
import dev.troupe.gateway.http.RequestIds;
import dev.troupe.gateway.http.Stages;
import dev.troupe.gateway.metrics.ServingMetrics;
import dev.troupe.gateway.replicas.ModelCatalog;
import dev.troupe.gateway.replicas.ReplicaSelector.Destination;
import dev.troupe.gateway.replicas.ServedModel;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationEvent;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletionStage;
import java.util.function.Function;
import org.apache.pekko.NotUsed;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.headers.RawHeader;
import org.apache.pekko.http.javadsl.server.Route;
import org.apache.pekko.stream.SharedKillSwitch;
import org.apache.pekko.stream.javadsl.Source;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the generation endpoints ({@code /v1/chat/completions}, {@code /v1/completions}) share
 * between a routed request and its answer: the worker events of a generation (measured, the
 * replica's in-flight count released at the end), holding the client's connection until the answer
 * is ready, answering without Pekko's request timeout, and the routing and request-id headers
 * ({@link GenerationStream#eventStream} writes their server-sent events).
 */
final class Generations {
  private static final Logger log = LoggerFactory.getLogger(Generations.class);

  /** The debug header naming the chosen replica and why ({@code RouteDecision#headerValue}). */
  static final String ROUTE_HEADER = "X-Troupe-Route";

  private final ModelCatalog models;
  private final ServingMetrics metrics;
  private final MigrationSettings migration;

  Generations(ModelCatalog models, ServingMetrics metrics, MigrationSettings migration) {
    this.models = models;
    this.metrics = metrics;
    this.migration = migration;
  }

  ModelCatalog models() {
    return models;
  }

  /**
   * The generation's events, from the routed replica and, if its worker is lost, from the replicas
   * that continue it; the routed replica's in-flight count drops at the end, and {@code served}
   * learns each replica that serves it (logged at the end when it moved).
   */
  Source<GenerationEvent, NotUsed> events(
      ServedModel model, Destination destination, RouteHeader.Served served) {
    String id = destination.request().requestId();
    return metrics.observe(
        model.name(),
        GenerationOwner.events(
                models.system(),
                models.replicas().attempts(model, destination),
                destination.request(),
                migration,
                destination.prefill(),
                prefillListener(model, served))
            .map(
                e -> {
                  served.seen(e);
                  return e;
                })
            .watchTermination(
                (mat, done) -> {
                  Stages.on(models.system(), done)
                      .whenComplete(
                          (ok, error) -> {
                            destination.lease().close();
                            if (destination.prefill() != null)
                              destination.prefill().lease().close();
                            List<String> by = served.replicas();
                            if (by.size() > 1)
                              log.info("request {} served by {}", id, String.join(" > ", by));
                            else log.debug("request {} served by {}", id, by);
                          });
                  return mat;
                }));
  }

  /** Records a prefill leg's outcome in the metrics and the route header. */
  private PrefillListener prefillListener(ServedModel model, RouteHeader.Served served) {
    return new PrefillListener() {
      @Override
      public void prefilled(String replica, long nanos) {
        served.prefill(replica, true);
        metrics.prefillLeg(model.name(), true, nanos);
      }

      @Override
      public void failed(String replica, String why, long nanos) {
        served.prefill(replica, false);
        metrics.prefillLeg(model.name(), false, nanos);
        metrics.servedWholeAfterSplit(model.name());
      }

      @Override
      public void pullFailed(String replica, String why) {
        served.prefill(replica, false);
        metrics.servedWholeAfterSplit(model.name());
      }
    };
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
   * {@code answer} with {@code X-Troupe-Route} when the debug header is on, written when the
   * response is ready so that it names the replicas that served ({@link RouteHeader}).
   */
  CompletionStage<HttpResponse> withRouteHeader(
      RouteHeader header, CompletionStage<HttpResponse> answer) {
    boolean on = models.replicas().settings().debugHeader();
    return answer.thenApply(r -> header.addTo(r, on));
  }

  /**
   * {@code answer} with the response's {@code X-Request-Id}: a body {@code request_id} may hold
   * characters a header cannot, and then it stays in the body only.
   */
  static Route withRequestId(String id, Route answer) {
    if (!RequestIds.isHeaderSafe(id)) return answer;
    return respondWithHeader(RawHeader.create(RequestIds.HEADER, id), () -> answer);
  }

  /**
   * Completes with {@code answer} of the request's client connection, without Pekko's request
   * timeout: the requests' owners bound the wait for a worker ({@code migration.attempt-timeout},
   * {@code migration.deadline}), and a generation may then take as long as it needs.
   */
  static Route answer(Function<Optional<Connection>, CompletionStage<HttpResponse>> answer) {
    return withoutRequestTimeout(
        () ->
            extractRequest(
                request -> completeWithFuture(answer.apply(ClientConnections.of(request)))));
  }
}
