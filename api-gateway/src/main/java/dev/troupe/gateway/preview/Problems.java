package dev.troupe.gateway.preview;

import dev.troupe.gateway.http.ApiException;
import dev.troupe.gateway.http.ValidationException;
import dev.troupe.protocol.api.ValidationErrorResponse.Detail;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;

/**
 * Collects FastAPI-style validation failures ({@code loc}, {@code msg}, {@code type} with
 * pydantic's wording) so a request is answered with every problem at once, not only the first. Also
 * the preview routes' small shared checks (path ids, query parameters).
 */
final class Problems {
  /** A larger list helps nobody and a hostile body could make it huge. */
  static final int MAX = 1000;

  private final List<Detail> details = new ArrayList<>();

  void add(List<Object> loc, String msg, String type) {
    if (details.size() < MAX) details.add(new Detail(loc, msg, type));
  }

  boolean isEmpty() {
    return details.isEmpty();
  }

  List<Detail> details() {
    return List.copyOf(details);
  }

  /** Answers 422 with every collected problem, if any. */
  void throwIfAny() {
    if (!details.isEmpty()) throw new ValidationException(details);
  }

  static List<Object> loc(List<Object> parent, Object... more) {
    List<Object> l = new ArrayList<>(parent);
    for (Object o : more) l.add(o);
    return l;
  }

  /** A model id from the path: anything that is not a UUID names no model (404). */
  static String modelId(String raw) {
    try {
      return UUID.fromString(raw).toString();
    } catch (IllegalArgumentException e) {
      throw modelNotFound(raw);
    }
  }

  static ApiException modelNotFound(String id) {
    return ApiException.notFound("Model " + id + " not found", "model_id");
  }

  /** {@code limit} in 1..100 (default 20), as the W&B OpenAPI declares it. */
  static int limit(Optional<String> raw, Problems p) {
    if (raw.isEmpty()) return 20;
    int v;
    try {
      v = Integer.parseInt(raw.get().trim());
    } catch (NumberFormatException e) {
      p.add(
          List.of("query", "limit"),
          "Input should be a valid integer, unable to parse string as an integer",
          "int_parsing");
      return 20;
    }
    if (v < 1)
      p.add(
          List.of("query", "limit"),
          "Input should be greater than or equal to 1",
          "greater_than_equal");
    if (v > 100)
      p.add(
          List.of("query", "limit"),
          "Input should be less than or equal to 100",
          "less_than_equal");
    return v;
  }
}
