package dev.troupe.gateway.http;

import static org.apache.pekko.http.javadsl.server.Directives.extractRequest;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.List;
import java.util.Optional;
import java.util.function.Supplier;
import org.apache.pekko.http.javadsl.model.HttpMethods;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.server.Route;

/**
 * API-key check for every path: {@code Authorization: Bearer <key>} must match a configured key.
 * Runs before routing, so an unauthenticated caller learns nothing about which routes exist (not
 * even through {@code OPTIONS}: there is no CORS support, so a preflight could not succeed anyway).
 * Open are only {@code /health} (load balancers probe it), the dashboard's static files ({@code GET
 * /dashboard/…}: no data, its own calls carry the key) and, when configured, {@code GET /metrics}.
 * vLLM's middleware guards only {@code /v1}; here {@code /tokenize} and {@code /detokenize} run the
 * model's tokenizer and template, and {@code /metrics} shows model names and load, so they need the
 * key too. No keys configured means the API is open.
 */
public final class BearerAuth {
  private final List<byte[]> keyDigests;
  private final boolean metricsOpen;

  public BearerAuth(List<String> apiKeys) {
    this(apiKeys, false);
  }

  public BearerAuth(List<String> apiKeys, boolean metricsOpen) {
    this.keyDigests = apiKeys.stream().map(BearerAuth::sha256).toList();
    this.metricsOpen = metricsOpen;
  }

  /** {@code inner} for authorized requests, a 401 OpenAI error otherwise. */
  public Route guard(Supplier<Route> inner) {
    if (keyDigests.isEmpty()) return inner.get();
    return extractRequest(
        request -> {
          if (!needsAuth(request) || authorized(request)) return inner.get();
          return ApiErrors.reply(ApiException.unauthorized());
        });
  }

  private boolean needsAuth(HttpRequest request) {
    String path = request.getUri().path();
    if (path.equals("/health")) return false;
    // The dashboard's static files hold no data; its data calls carry the key.
    if (request.method() == HttpMethods.GET
        && (path.equals("/dashboard") || path.startsWith("/dashboard/"))) return false;
    return !(metricsOpen && path.equals("/metrics"));
  }

  private boolean authorized(HttpRequest request) {
    Optional<String> header = request.getHeader("Authorization").map(h -> h.value());
    if (header.isEmpty()) return false;
    String value = header.get().trim();
    int space = value.indexOf(' ');
    if (space < 0 || !value.substring(0, space).equalsIgnoreCase("bearer")) return false;
    byte[] offered = sha256(value.substring(space + 1).trim());
    // Compare fixed-length digests in constant time, and against every key, so timing reveals
    // nothing.
    boolean ok = false;
    for (byte[] key : keyDigests) ok |= MessageDigest.isEqual(offered, key);
    return ok;
  }

  private static byte[] sha256(String s) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is part of every JDK", e);
    }
  }
}
