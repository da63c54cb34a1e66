package dev.troupe.gateway.http;

import org.apache.pekko.http.javadsl.server.Route;

/**
 * One endpoint of the HTTP API (one class per endpoint). {@link ApiRoutes} wraps every endpoint in
 * auth, the body-size limit, request ids and the error handlers, so a route only parses, validates,
 * converts, asks and maps.
 */
@FunctionalInterface
public interface ApiRoute {
  Route route();
}
