package dev.troupe.gateway.http;

import dev.troupe.protocol.api.ErrorResponse;

/**
 * A failure the client can act on, carrying everything the OpenAI error body needs. Thrown anywhere
 * below a route (parsing, validation, mapping, worker replies) and turned into a response by {@link
 * ApiErrors#exceptionHandler()} — the only place error bodies are written.
 */
public final class ApiException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final int status;
  private final String type;
  private final String param;

  public ApiException(int status, String type, String message, String param) {
    super(message);
    if (status < 400 || status > 599)
      throw new IllegalArgumentException("not an error status: " + status);
    this.status = status;
    this.type = type;
    this.param = param;
  }

  /** 400: the request is invalid; {@code param} names the offending field (or null). */
  public static ApiException badRequest(String message, String param) {
    return new ApiException(400, "BadRequestError", message, param);
  }

  /** 401: missing or wrong API key. */
  public static ApiException unauthorized() {
    return new ApiException(401, "AuthenticationError", "Unauthorized", null);
  }

  /** 404: an unknown model (param {@code model}) or resource. */
  public static ApiException notFound(String message, String param) {
    return new ApiException(404, "NotFoundError", message, param);
  }

  /** 413: the body is larger than the configured limit. */
  public static ApiException payloadTooLarge(long limitBytes) {
    return new ApiException(
        413,
        "PayloadTooLargeError",
        "Request body is larger than the limit of " + limitBytes + " bytes.",
        null);
  }

  /** 503: the model's workers cannot take more work right now; the client may retry later. */
  public static ApiException overloaded(String message) {
    return new ApiException(503, "ServiceUnavailableError", message, null);
  }

  /** 500: a bug or an infrastructure failure; the message must not leak internals. */
  public static ApiException internal(String message) {
    return new ApiException(500, "InternalServerError", message, null);
  }

  public int status() {
    return status;
  }

  public String type() {
    return type;
  }

  /**
   * The offending request field as a dotted path ({@code stream_options.include_usage}), or null.
   */
  public String param() {
    return param;
  }

  public ErrorResponse body() {
    return ErrorResponse.of(status, type, getMessage(), param);
  }

  @Override
  public String toString() {
    return "ApiException["
        + status
        + " "
        + type
        + (param == null ? "" : " param=" + param)
        + ": "
        + getMessage()
        + "]";
  }
}
