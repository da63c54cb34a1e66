package dev.troupe.gateway.routes;

import dev.troupe.gateway.chat.GenerationStream;
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
import org.apache.pekko.NotUsed;
import org.apache.pekko.stream.SharedKillSwitch;
import org.apache.pekko.stream.javadsl.Source;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the generation endpoints ({@code /v1/chat/completions}, {@code /v1/completions}) share
 * between a routed request and its answer: the worker events of a generation (measured, the
 * replica's in-flight count released at the end), holding the client's connection until the answer
 * is ready, and the routing debug header ({@link GenerationStream#eventStream} writes their
 * server-sent events).
 */
final class Generations {
  private static final Logger log = LoggerFactory.getLogger(Generations.class);

  /** The debug header naming the chosen replica, why, and who served ({@link RouteHeader}). */
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
   * that continue it; the routed replica's in-flight count drops at the end, and {@code served}
   * learns each replica that serves it (logged at the end when it moved).
   */
  Source<GenerationEvent, NotUsed> events(
      ServedModel model, Destination destination, RouteHeader.Served served) {
    String id = destination.request().requestId();
    return metrics.observe(
        model.name(),
        GenerationStream.events(models.replicas(model, destination), destination.request())
            .map(
                e -> {
                  served.seen(e);
                  return e;
                })
            .watchTermination(
                (mat, done) -> {
                  done.whenComplete(
                      (ok, error) -> {
                        destination.lease().close();
                        List<String> by = served.replicas();
                        if (by.size() > 1)
                          log.info("request {} served by {}", id, String.join(" > ", by));
                        else log.debug("request {} served by {}", id, by);
                      });
                  return mat;
                }));
  }

  /** Whether answers carry {@code X-Troupe-Route} ({@code routing.debug-header}). */
  boolean routeHeader() {
    return models.router().settings().debugHeader();
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
}
