package dev.troupe.gateway.http;

import static org.apache.pekko.http.javadsl.server.Directives.optionalHeaderValueByName;
import static org.apache.pekko.http.javadsl.server.Directives.respondWithDefaultHeader;

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

  /** Wraps {@code inner} so that the response has an {@code X-Request-Id}. */
  public static Route withRequestIdHeader(Supplier<Route> inner) {
    return optionalHeaderValueByName(
        HEADER,
        incoming -> respondWithDefaultHeader(RawHeader.create(HEADER, incoming.filter(s -> !s.isBlank()).orElseGet(RequestIds::random)), inner));
  }

  /** The caller's {@code X-Request-Id}, if any. */
  public static Route incoming(Function<Optional<String>, Route> inner) {
    return optionalHeaderValueByName(HEADER, id -> inner.apply(id.filter(s -> !s.isBlank())));
  }
}
