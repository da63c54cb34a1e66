package dev.troupe.gateway.http;

import static org.apache.pekko.http.javadsl.server.Directives.concat;
import static org.apache.pekko.http.javadsl.server.Directives.handleExceptions;
import static org.apache.pekko.http.javadsl.server.Directives.handleRejections;
import static org.apache.pekko.http.javadsl.server.Directives.withRequestTimeoutResponse;
import static org.apache.pekko.http.javadsl.server.Directives.withSizeLimit;

import java.util.ArrayList;
import java.util.List;
import org.apache.pekko.http.javadsl.server.Route;

/**
 * Composes endpoint classes into the sealed route of the HTTP API. Outermost to innermost: error
 * handlers (every error body), {@code X-Request-Id}, Bearer auth (every path but {@code /health}),
 * the body-size limit, then the endpoints in the order added.
 *
 * <pre>{@code
 * Route route = ApiRoutes.builder(settings)
 *     .add(new ChatCompletionsRoute(...))
 *     .add(new TrajectoryLogRoute(...))   // one line per endpoint class
 *     .build();
 * }</pre>
 */
public final class ApiRoutes {
  private final GatewaySettings settings;
  private final List<ApiRoute> routes = new ArrayList<>();

  private ApiRoutes(GatewaySettings settings) {
    this.settings = settings;
  }

  public static ApiRoutes builder(GatewaySettings settings) {
    return new ApiRoutes(settings);
  }

  /** Adds one endpoint. */
  public ApiRoutes add(ApiRoute route) {
    routes.add(route);
    return this;
  }

  /** Adds several endpoints. */
  public ApiRoutes addAll(List<? extends ApiRoute> more) {
    routes.addAll(more);
    return this;
  }

  /** The sealed route: never rejects, every failure is an error response. */
  public Route build() {
    return seal(settings, routes.stream().map(ApiRoute::route).toList());
  }

  /** Wraps already-built endpoint routes in the API's cross-cutting directives. */
  public static Route seal(GatewaySettings settings, List<Route> endpoints) {
    BearerAuth auth = new BearerAuth(settings.apiKeys(), settings.metricsWithoutAuth());
    long limit = settings.maxBodyBytes();
    Route all =
        endpoints.isEmpty()
            ? org.apache.pekko.http.javadsl.server.Directives.reject()
            : endpoints.size() == 1
                ? endpoints.get(0)
                : concat(
                    endpoints.get(0), endpoints.subList(1, endpoints.size()).toArray(Route[]::new));
    // Fires only when nothing else answered within troupe.gateway.request-timeout (the ask
    // timeouts answer first): still the API's error shape, never Pekko's plain text.
    ApiException timedOut =
        ApiException.overloaded(
            "No response within "
                + settings.requestTimeout().toSeconds()
                + " s (troupe.gateway.request-timeout); retry later");
    return withRequestTimeoutResponse(
        request -> ApiErrors.response(timedOut),
        () ->
            handleExceptions(
                ApiErrors.exceptionHandler(limit),
                () ->
                    handleRejections(
                        ApiErrors.rejectionHandler(limit),
                        () ->
                            RequestIds.withRequestIdHeader(
                                () ->
                                    auth.guard(
                                        // Errors raised while the inner route runs need both
                                        // handlers
                                        // again,
                                        // inside the request-id header so error responses carry it
                                        // too.
                                        () ->
                                            handleExceptions(
                                                ApiErrors.exceptionHandler(limit),
                                                () -> withSizeLimit(limit, () -> all)))))));
  }
}
