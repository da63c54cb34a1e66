package dev.troupe.gateway.http;

import java.time.Duration;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.http.javadsl.Http;
import org.apache.pekko.http.javadsl.HttpTerminated;
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

  /**
   * The largest network read the HTTP parser may be handed safely: Pekko HTTP parses the requests
   * of one read recursively, one level per request, and ~700 levels overflow a default thread stack
   * (fatal: the JVM exits). 8 KiB holds at most 512 requests of the shortest kind (16 bytes).
   */
  static final long SAFE_READ_BYTES = 8 * 1024;

  private GatewayServer() {}

  /**
   * Binds {@code route} (already sealed by {@link ApiRoutes}) on the configured host and port, each
   * connection handled through {@link ClientConnections} (which applies Pekko's configured {@code
   * idle-timeout} itself, only while no held request is pending).
   */
  public static CompletionStage<ServerBinding> bind(
      ActorSystem<?> system, GatewaySettings settings, Route route) {
    warnOfLargeReads(system);
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

  /**
   * Stops {@code binding} gracefully within {@code deadline}: first drains its connections ({@link
   * ResponsesInFlight#drained}: each closes once its responses in flight are written to the end,
   * streamed bodies to their last byte; responses from now on close their connections), then
   * Pekko's graceful termination with what is left of the deadline, for what did not close in time.
   * Pekko's alone would abort a connection whose streamed response has begun at once, cutting the
   * stream. Unbind first (no new connections) for the wait to end.
   */
  public static CompletionStage<HttpTerminated> terminate(
      ActorSystem<?> system, ServerBinding binding, Duration deadline) {
    long start = System.nanoTime();
    ResponsesInFlight responses = ResponsesInFlight.get(system);
    int open = responses.count();
    if (open > 0) log.info("HTTP API draining: waiting for {} response(s) in flight", open);
    return responses
        .drained()
        .toCompletableFuture()
        .completeOnTimeout(Done.getInstance(), deadline.toMillis(), TimeUnit.MILLISECONDS)
        .thenCompose(
            drained -> {
              Duration left = deadline.minusNanos(System.nanoTime() - start);
              if (responses.connections() > 0)
                log.warn(
                    "HTTP API: {} connection(s) still open after {} ms ({} response(s) in"
                        + " flight); closing them",
                    responses.connections(),
                    deadline.toMillis(),
                    responses.count());
              return binding.terminate(left.isNegative() ? Duration.ZERO : left);
            });
  }

  /** The node's launcher config sets 4 KiB (troupe-node.conf); an embedding must too. */
  private static void warnOfLargeReads(ActorSystem<?> system) {
    long read = system.settings().config().getBytes("pekko.io.tcp.direct-buffer-size");
    if (read > SAFE_READ_BYTES)
      log.warn(
          "pekko.io.tcp.direct-buffer-size is {} bytes: a client pipelining many small requests in"
              + " one read can overflow Pekko HTTP's parser stack and stop the JVM; set it to 4 KiB"
              + " (docs/api.md, \"Pipelined requests\")",
          read);
  }
}
