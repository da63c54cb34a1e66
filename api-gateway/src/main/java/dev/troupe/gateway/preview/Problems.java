package dev.troupe.gateway.preview;

import dev.troupe.gateway.http.ApiException;
import dev.troupe.gateway.http.ValidationException;
import dev.troupe.protocol.api.ValidationErrorResponse.Detail;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/**
 * Collects FastAPI-style validation failures ({@code loc}, {@code msg}, {@code type} with
 * pydantic's wording) so a request is answered with every problem at once, not only the first. Also
 * the preview routes' shared path-id check.
 */
final class Problems {
  /** A larger list helps nobody and a hostile body could make it huge. */
  static final int MAX = 1000;

  private final List<Detail> details = new ArrayList<>();

  void add(List<Object> loc, String msg, String type) {
    if (details.size() >= MAX) return;
    // A key from the body may hold a lone surrogate: the answer must still be valid UTF-8 JSON.
    List<Object> printable = new ArrayList<>(loc.size());
    for (Object part : loc)
      printable.add(part instanceof String s ? Text.withoutLoneSurrogates(s) : part);
    details.add(new Detail(printable, msg, type));
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
}
