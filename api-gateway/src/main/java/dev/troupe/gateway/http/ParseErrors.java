package dev.troupe.gateway.http;

import org.apache.pekko.event.LoggingAdapter;
import org.apache.pekko.http.ParsingErrorHandler;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.StatusCodes;
import org.apache.pekko.http.scaladsl.model.ErrorInfo;
import org.apache.pekko.http.scaladsl.model.StatusCode;
import org.apache.pekko.http.scaladsl.settings.ServerSettings;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The answer to a request so malformed that Pekko HTTP's parser refuses it before any route runs
 * (installed by {@link GatewayServer} as the server's {@code parsing.error-handler}): the API's
 * error shape instead of Pekko's plain text, and one log line.
 *
 * <p>A request line the parser cannot split into method, target and {@code HTTP/1.x} is a 400, as
 * RFC 9112 section 3.2 asks of an invalid request line and as uvicorn answers for vLLM. Pekko's
 * parser calls it 505 when the target holds a raw space ({@code GET /a b HTTP/1.1}: it reads {@code
 * b HTTP/1.1} as the protocol), and a text request line cannot be HTTP/2 or 3 anyway. Unknown and
 * lowercase methods and the HTTP/2 connection preface ({@code PRI * HTTP/2.0}) stay 501, as RFC
 * 9110 section 9.1 says for a method the server does not implement.
 *
 * <p>Pekko instantiates it by name with its no-argument constructor.
 */
public final class ParseErrors extends ParsingErrorHandler {
  private static final Logger log = LoggerFactory.getLogger(ParseErrors.class);

  @Override
  public HttpResponse handle(
      StatusCode status, ErrorInfo info, LoggingAdapter pekkoLog, ServerSettings settings) {
    ApiException e = toApiException(status.intValue(), info.summary());
    log.info("Refused a malformed request with {}: {}", e.status(), e.getMessage());
    return ApiErrors.response(e);
  }

  static ApiException toApiException(int status, String summary) {
    if (status == 505)
      return ApiException.badRequest(
          "Malformed request line: the target must not contain spaces and the protocol must be"
              + " HTTP/1.0 or HTTP/1.1.",
          null);
    String message = summary == null || summary.isBlank() ? reason(status) : summary;
    String type =
        switch (status) {
          case 413 -> "PayloadTooLargeError";
          case 414 -> "URITooLongError";
          case 431 -> "RequestHeaderFieldsTooLargeError";
          case 501 -> "NotImplementedError";
          default -> status >= 500 ? "InternalServerError" : "BadRequestError";
        };
    return new ApiException(status, type, message, null);
  }

  private static String reason(int status) {
    return StatusCodes.get(status).reason();
  }
}
