package dev.troupe.protocol.api;

import java.util.List;

/**
 * FastAPI's request-validation body, {@code {"detail":[{"loc","msg","type"}]}}, answered with 422
 * by the endpoints whose reference implementation is a FastAPI service (the preview log operation).
 */
public record ValidationErrorResponse(List<Detail> detail) {

  public ValidationErrorResponse {
    detail = List.copyOf(detail);
  }

  /**
   * One validation failure.
   *
   * @param loc where the bad value is: {@code "body"} then field names (strings) and list indexes
   *     (integers), as FastAPI writes it
   * @param msg what is wrong
   * @param type a machine-readable kind, e.g. {@code missing}, {@code int_parsing}, {@code
   *     json_invalid}
   */
  public record Detail(List<Object> loc, String msg, String type) {
    public Detail {
      loc = List.copyOf(loc);
      if (msg == null) throw new IllegalArgumentException("msg is required");
      if (type == null) throw new IllegalArgumentException("type is required");
    }
  }
}
