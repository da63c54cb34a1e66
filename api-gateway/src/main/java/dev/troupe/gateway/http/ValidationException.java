package dev.troupe.gateway.http;

import dev.troupe.protocol.api.ValidationErrorResponse;
import dev.troupe.protocol.api.ValidationErrorResponse.Detail;
import java.util.List;

/**
 * A request rejected FastAPI-style: answered with 422 and {@code {"detail":[{loc,msg,type}]}} by
 * {@link ApiErrors#exceptionHandler()}. For endpoints whose reference service is FastAPI (the
 * preview routes); OpenAI-compatible endpoints throw {@link ApiException} instead.
 */
public final class ValidationException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final transient List<Detail> details;

  public ValidationException(List<Detail> details) {
    super(details.isEmpty() ? "validation failed" : details.get(0).msg());
    this.details = List.copyOf(details);
  }

  /** One failure at {@code loc} (for example {@code List.of("body", "split")}). */
  public static ValidationException of(List<Object> loc, String msg, String type) {
    return new ValidationException(List.of(new Detail(loc, msg, type)));
  }

  public List<Detail> details() {
    return details;
  }

  public ValidationErrorResponse body() {
    return new ValidationErrorResponse(details);
  }
}
