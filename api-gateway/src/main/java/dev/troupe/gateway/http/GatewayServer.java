package dev.troupe.gateway.http;

import java.time.Duration;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.http.javadsl.Http;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.apache.pekko.http.javadsl.server.Route;
import org.apache.pekko.http.javadsl.settings.ServerSettings;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Binds the HTTP API. Used by deploy's {@code Main} on nodes with the {@code gateway} role:
 *
 * <pre>{@code
 * GatewaySettings settings = GatewaySettings.fromConfig(system.settings().config());
 * Route route = ApiRoutes.builder(settings).add(...).build();
 * GatewayServer.bind(system, settings, route);
 * }</pre>
 */
public final class GatewayServer {
  private static final Logger log = LoggerFactory.getLogger(GatewayServer.class);

  private GatewayServer() {}

  /**
   * Binds {@code route} (already sealed by {@link ApiRoutes}) on the configured host and port, each
   * connection handled through {@link ClientConnections} (which applies Pekko's configured {@code
   * idle-timeout} itself, only while no held request is pending).
   */
  public static CompletionStage<ServerBinding> bind(
      ActorSystem<?> system, GatewaySettings settings, Route route) {
    var configured = ServerSettings.create(system.settings().config()).getTimeouts().idleTimeout();
    Duration idle =
        configured.isFinite() ? Duration.ofNanos(configured.toNanos()) : Duration.ofDays(365);
    // The parser limit matches the route's so a large Content-Length fails the same way (413).
    return Http.get(system)
        .newServerAt(settings.host(), settings.port())
        .adaptSettings(
            s ->
                s.withParserSettings(
                        s.getParserSettings().withMaxContentLength(settings.maxBodyBytes()))
                    .withParsingErrorHandler(ParseErrors.class.getName())
                    .withTimeouts(
                        s.getTimeouts()
                            .withIdleTimeout(scala.concurrent.duration.Duration.Inf())
                            .withRequestTimeout(
                                scala.concurrent.duration.Duration.fromNanos(
                                    settings.requestTimeout().toNanos()))))
        .bindFlow(ClientConnections.handler(route, system, idle))
        .whenComplete(
            (binding, error) -> {
              if (error != null)
                log.error(
                    "HTTP API failed to bind {}:{}: {}",
                    settings.host(),
                    settings.port(),
                    error.toString());
              else
                log.info(
                    "HTTP API listening on {} ({} API key(s) configured)",
                    binding.localAddress(),
                    settings.apiKeys().size());
            });
  }
}
