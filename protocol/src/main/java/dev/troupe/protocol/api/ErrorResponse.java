package dev.troupe.protocol.api;

/**
 * The OpenAI-style error envelope every non-validation failure of the HTTP API answers with (vLLM
 * v0.10.1+ shape): {@code {"error":{"message","type","param","code"}}}, where {@code code} is the
 * integer HTTP status as vLLM writes it.
 */
public record ErrorResponse(ErrorInfo error) {

  public ErrorResponse {
    if (error == null) throw new IllegalArgumentException("error is required");
  }

  public static ErrorResponse of(int status, String type, String message, String param) {
    return new ErrorResponse(new ErrorInfo(message, type, param, status));
  }

  /**
   * @param message human-readable description
   * @param type error class, e.g. {@code BadRequestError}, {@code NotFoundError}
   * @param param the offending request field (dotted path), or null
   * @param code the HTTP status code
   */
  public record ErrorInfo(String message, String type, String param, int code) {
    public ErrorInfo {
      if (message == null) throw new IllegalArgumentException("message is required");
      if (type == null) throw new IllegalArgumentException("type is required");
    }
  }
}
