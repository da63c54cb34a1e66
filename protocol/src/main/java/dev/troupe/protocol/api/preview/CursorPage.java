package dev.troupe.protocol.api.preview;

import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.List;
import java.util.function.Function;

/**
 * An OpenAI-style cursor page: the client asks for the next page with {@code after=<last_id>} while
 * {@code has_more} is true.
 */
public record CursorPage<T>(
    String object,
    List<T> data,
    @JsonProperty("first_id") String firstId,
    @JsonProperty("last_id") String lastId,
    @JsonProperty("has_more") boolean hasMore) {

  public CursorPage {
    data = List.copyOf(data);
  }

  /** A page of {@code data}, ids taken with {@code id}. */
  public static <T> CursorPage<T> of(List<T> data, Function<T, String> id, boolean hasMore) {
    return new CursorPage<>(
        "list",
        data,
        data.isEmpty() ? null : id.apply(data.get(0)),
        data.isEmpty() ? null : id.apply(data.get(data.size() - 1)),
        hasMore);
  }
}
