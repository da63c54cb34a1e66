package dev.troupe.gateway.routes;

import static org.apache.pekko.http.javadsl.server.Directives.complete;
import static org.apache.pekko.http.javadsl.server.Directives.get;
import static org.apache.pekko.http.javadsl.server.Directives.onComplete;
import static org.apache.pekko.http.javadsl.server.Directives.path;

import dev.troupe.gateway.http.ApiRoute;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.StatusCodes;
import org.apache.pekko.http.javadsl.server.Route;

/**
 * {@code GET /health}: 200 with an empty body while the service can serve, 503 (empty body) when
 * the health check says otherwise or fails — vLLM's shape. Open without an API key.
 */
public final class HealthRoute implements ApiRoute {
  private final Supplier<CompletionStage<Boolean>> healthy;

  /**
   * @param healthy asked on every call, e.g. "is at least one worker of every model reachable"
   */
  public HealthRoute(Supplier<CompletionStage<Boolean>> healthy) {
    this.healthy = healthy;
  }

  @Override
  public Route route() {
    return path(
        "health",
        () ->
            get(
                () ->
                    onComplete(
                        healthy.get(),
                        result ->
                            complete(
                                HttpResponse.create()
                                    .withStatus(
                                        result.isSuccess() && Boolean.TRUE.equals(result.get())
                                            ? StatusCodes.OK
                                            : StatusCodes.SERVICE_UNAVAILABLE)))));
  }
}
