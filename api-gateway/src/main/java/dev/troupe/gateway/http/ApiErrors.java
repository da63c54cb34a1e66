package dev.troupe.gateway.http;

import static org.apache.pekko.http.javadsl.server.Directives.complete;

import java.util.stream.Collectors;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.StatusCodes;
import org.apache.pekko.http.javadsl.server.AuthenticationFailedRejection;
import org.apache.pekko.http.javadsl.server.AuthorizationFailedRejection;
import org.apache.pekko.http.javadsl.server.ExceptionHandler;
import org.apache.pekko.http.javadsl.server.MalformedRequestContentRejection;
import org.apache.pekko.http.javadsl.server.MethodRejection;
import org.apache.pekko.http.javadsl.server.RejectionHandler;
import org.apache.pekko.http.javadsl.server.RequestEntityExpectedRejection;
import org.apache.pekko.http.javadsl.server.Route;
import org.apache.pekko.http.javadsl.server.UnsupportedRequestContentTypeRejection;
import org.apache.pekko.http.javadsl.server.ValidationRejection;
import org.apache.pekko.http.scaladsl.model.EntityStreamException;
import org.apache.pekko.http.scaladsl.model.EntityStreamSizeException;
import org.apache.pekko.http.scaladsl.model.IllegalRequestException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one exception handler and the one rejection handler of the HTTP API: every error response
 * body is written here, OpenAI-shaped ({@code {"error":{…}}}) or, for {@link ValidationException},
 * FastAPI-shaped ({@code {"detail":[…]}}).
 */
public final class ApiErrors {
  private static final Logger log = LoggerFactory.getLogger(ApiErrors.class);

  private ApiErrors() {}

  /** The response for {@code e}. */
  public static HttpResponse response(ApiException e) {
    return JsonBodies.response(StatusCodes.get(e.status()), e.body());
  }

  /** Completes with the error response for {@code e}. */
  public static Route reply(ApiException e) {
    return complete(response(e));
  }

  /**
   * Maps every throwable escaping a route: API and validation errors to their bodies, oversized
   * bodies to 413, a body the HTTP layer could not read (malformed chunked encoding, a client that
   * closed the connection mid-body) to its 4xx with one log line, and anything else to a 500 that
   * does not leak internals (logged here, with its stack).
   */
  public static ExceptionHandler exceptionHandler(long bodyLimitBytes) {
    return ExceptionHandler.newBuilder()
        .match(ApiException.class, ApiErrors::reply)
        .match(
            ValidationException.class,
            e -> complete(JsonBodies.response(StatusCodes.UNPROCESSABLE_CONTENT, e.body())))
        .match(
            EntityStreamSizeException.class,
            e -> reply(ApiException.payloadTooLarge(bodyLimitBytes)))
        .matchAny(
            e -> {
              Throwable cause = unwrap(e);
              if (cause instanceof ApiException api) return reply(api);
              if (cause instanceof ValidationException v)
                return complete(JsonBodies.response(StatusCodes.UNPROCESSABLE_CONTENT, v.body()));
              if (cause instanceof EntityStreamSizeException)
                return reply(ApiException.payloadTooLarge(bodyLimitBytes));
              if (cause instanceof IllegalRequestException
                  || cause instanceof EntityStreamException) return reply(unreadableBody(cause));
              log.error("Unhandled error in a route", e);
              return reply(ApiException.internal("Internal server error"));
            })
        .build();
  }

  /** Maps rejections (no route matched, wrong method, unreadable entity) to OpenAI error bodies. */
  public static RejectionHandler rejectionHandler(long bodyLimitBytes) {
    return RejectionHandler.newBuilder()
        .handle(
            MalformedRequestContentRejection.class,
            r -> {
              if (unwrap(r.getCause()) instanceof EntityStreamSizeException)
                return reply(ApiException.payloadTooLarge(bodyLimitBytes));
              return reply(ApiException.badRequest("Malformed request body: " + r.message(), null));
            })
        .handle(
            UnsupportedRequestContentTypeRejection.class,
            r ->
                reply(
                    ApiException.badRequest(
                        "Unsupported Media Type: Only 'application/json' is allowed", null)))
        .handle(
            RequestEntityExpectedRejection.class,
            r ->
                reply(
                    ApiException.badRequest(
                        "The request body must be a JSON object, got nothing.", null)))
        .handle(ValidationRejection.class, r -> reply(ApiException.badRequest(r.message(), null)))
        .handle(AuthenticationFailedRejection.class, r -> reply(ApiException.unauthorized()))
        .handle(AuthorizationFailedRejection.class, r -> reply(ApiException.unauthorized()))
        .handleAll(
            MethodRejection.class,
            rs -> {
              String allowed =
                  rs.stream()
                      .map(r -> r.supported().name())
                      .distinct()
                      .collect(Collectors.joining(", "));
              return reply(
                  new ApiException(
                      405,
                      "MethodNotAllowedError",
                      "Method Not Allowed (allowed: " + allowed + ")",
                      null));
            })
        .handleNotFound(reply(ApiException.notFound("Not Found", null)))
        .build()
        // Anything else (query parameters, headers, …) keeps Pekko's status and text, in our body
        // shape.
        .withFallback(RejectionHandler.defaultHandler().mapRejectionResponse(ApiErrors::reshape));
  }

  private static HttpResponse reshape(HttpResponse r) {
    if (r.entity().getContentType().mediaType().toString().startsWith("application/json")) return r;
    String text =
        r.entity() instanceof org.apache.pekko.http.javadsl.model.HttpEntity.Strict s
            ? s.getData().utf8String()
            : r.status().reason();
    int status = r.status().intValue();
    String type =
        status == 413
            ? "PayloadTooLargeError"
            : status >= 500 ? "InternalServerError" : "BadRequestError";
    return JsonBodies.response(r.status(), new ApiException(status, type, text, null).body());
  }

  /**
   * The HTTP layer could not deliver the body: its chunked encoding is malformed, or the client
   * closed the connection before sending all of it (then nobody reads this answer). Either is the
   * client's doing, so one line, no stack.
   */
  private static ApiException unreadableBody(Throwable e) {
    int status = 400;
    String summary = e.getMessage();
    if (e instanceof IllegalRequestException ire) {
      status = ire.status().intValue();
      summary = ire.info().summary();
    } else if (e instanceof EntityStreamException ese) {
      summary = ese.info().summary();
    }
    log.info("Could not read a request body ({}): {}", status, summary);
    return ParseErrors.toApiException(status, "Cannot read the request body: " + summary);
  }

  private static Throwable unwrap(Throwable t) {
    Throwable cur = t;
    for (int i = 0; i < 8 && cur != null; i++) {
      if (cur instanceof ApiException
          || cur instanceof ValidationException
          || cur instanceof EntityStreamSizeException
          || cur instanceof IllegalRequestException
          || cur instanceof EntityStreamException) return cur;
      cur = cur.getCause();
    }
    return t;
  }
}
