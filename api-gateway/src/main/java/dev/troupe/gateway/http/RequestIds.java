package dev.troupe.gateway.http;

import static org.apache.pekko.http.javadsl.server.Directives.handleExceptions;
import static org.apache.pekko.http.javadsl.server.Directives.optionalHeaderValueByName;
import static org.apache.pekko.http.javadsl.server.Directives.respondWithDefaultHeader;
import static org.apache.pekko.http.javadsl.server.Directives.respondWithHeader;

import java.util.Optional;
import java.util.UUID;
import java.util.function.Function;
import java.util.function.Supplier;
import org.apache.pekko.http.javadsl.model.headers.RawHeader;
import org.apache.pekko.http.javadsl.server.Route;

/**
 * {@code X-Request-Id}: every response carries one, the caller's when it sent one, else a fresh
 * 32-hex-digit id (vLLM's {@code --enable-request-id-headers}, always on here). Routes that own an
 * id of their own (chat) set the header themselves; this default then steps aside.
 */
public final class RequestIds {
  public static final String HEADER = "X-Request-Id";

  private RequestIds() {}

  /** A random uuid4 as 32 hex digits, vLLM's id format. */
  public static String random() {
    return UUID.randomUUID().toString().replace("-", "");
  }

  /** Whether {@code id} can be sent as a header value: printable ASCII, at most 256 characters. */
  public static boolean isHeaderSafe(String id) {
    if (id.isEmpty() || id.length() > 256) return false;
    for (int i = 0; i < id.length(); i++) {
      char c = id.charAt(i);
      if (c < 0x20 || c > 0x7e) return false;
    }
    return true;
  }

  /** Wraps {@code inner} so that the response has an {@code X-Request-Id}. */
  public static Route withRequestIdHeader(Supplier<Route> inner) {
    return optionalHeaderValueByName(
        HEADER,
        incoming ->
            respondWithDefaultHeader(
                RawHeader.create(
                    HEADER, incoming.filter(s -> !s.isBlank()).orElseGet(RequestIds::random)),
                inner));
  }

  /**
   * {@code inner} answered with the request's own id in {@code X-Request-Id}, its errors included:
   * the caller's header when sent (it wins, as in vLLM), else the body's {@code request_id} when it
   * can be a header value; otherwise the default header stays. For routes whose body names an id.
   */
  public static Route echo(Optional<String> header, String bodyId, Supplier<Route> inner) {
    if (header.isPresent() || bodyId == null || !isHeaderSafe(bodyId)) return inner.get();
    // The body has been read by now, so no size failure can happen below: the limit is moot.
    return respondWithHeader(
        RawHeader.create(HEADER, bodyId),
        () -> handleExceptions(ApiErrors.exceptionHandler(Long.MAX_VALUE), inner));
  }

  /** The caller's {@code X-Request-Id}, if any. */
  public static Route incoming(Function<Optional<String>, Route> inner) {
    return optionalHeaderValueByName(HEADER, id -> inner.apply(id.filter(s -> !s.isBlank())));
  }
}
