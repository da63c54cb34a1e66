package dev.troupe.gateway.http;

import com.typesafe.config.Config;
import java.time.Duration;
import java.util.List;

/**
 * Everything the HTTP layer is configured with, read once from {@code troupe.gateway} (see the
 * module's {@code reference.conf}).
 *
 * @param host interface to bind
 * @param port TCP port to bind (0 = any free port)
 * @param apiKeys accepted Bearer keys, required on every path but {@code /health}; empty = no auth
 * @param maxBodyBytes request bodies above this size are answered with 413
 * @param askTimeout how long a route waits for a worker's first answer before a 503
 * @param metricsWithoutAuth {@code GET /metrics} is open without a key (for a scraper that cannot
 *     send one)
 * @param requestTimeout the longest a request may wait for its response to start; then a 503 in the
 *     OpenAI shape. Longer than {@code askTimeout} and the trajectory log's store timeout, so those
 *     answer first with their own message; it only catches what nothing else answers
 */
public record GatewaySettings(
    String host,
    int port,
    List<String> apiKeys,
    long maxBodyBytes,
    Duration askTimeout,
    boolean metricsWithoutAuth,
    Duration requestTimeout) {

  /** 64 MiB: room for long multi-turn trajectories, small enough to refuse abuse. */
  public static final long DEFAULT_MAX_BODY_BYTES = 64L * 1024 * 1024;

  public GatewaySettings {
    if (host == null || host.isBlank()) throw new IllegalArgumentException("host is required");
    if (port < 0 || port > 65535) throw new IllegalArgumentException("port out of range: " + port);
    apiKeys = apiKeys.stream().filter(k -> !k.isBlank()).toList();
    if (maxBodyBytes < 1) throw new IllegalArgumentException("maxBodyBytes must be positive");
    if (askTimeout == null || askTimeout.isNegative() || askTimeout.isZero())
      throw new IllegalArgumentException("askTimeout must be positive");
    if (requestTimeout == null || requestTimeout.compareTo(askTimeout) <= 0)
      throw new IllegalArgumentException(
          "request-timeout ("
              + requestTimeout
              + ") must be longer than ask-timeout ("
              + askTimeout
              + "): a request waiting for a worker must get the ask timeout's 503 first");
  }

  /** Reads {@code troupe.gateway} from {@code config}. */
  public static GatewaySettings fromConfig(Config config) {
    Config c = config.getConfig("troupe.gateway");
    return new GatewaySettings(
        c.getString("host"),
        c.getInt("port"),
        c.getStringList("api-keys"),
        c.getBytes("max-body-size"),
        c.getDuration("ask-timeout"),
        c.getBoolean("metrics-without-auth"),
        c.getDuration("request-timeout"));
  }

  /** Loopback on {@code port}, the given keys, default limits: for tests and embedding. */
  public static GatewaySettings of(int port, List<String> apiKeys) {
    return new GatewaySettings(
        "127.0.0.1",
        port,
        apiKeys,
        DEFAULT_MAX_BODY_BYTES,
        Duration.ofSeconds(30),
        false,
        Duration.ofSeconds(150));
  }

  public GatewaySettings withPort(int newPort) {
    return new GatewaySettings(
        host, newPort, apiKeys, maxBodyBytes, askTimeout, metricsWithoutAuth, requestTimeout);
  }

  public GatewaySettings withApiKeys(List<String> keys) {
    return new GatewaySettings(
        host, port, keys, maxBodyBytes, askTimeout, metricsWithoutAuth, requestTimeout);
  }

  public GatewaySettings withMaxBodyBytes(long bytes) {
    return new GatewaySettings(
        host, port, apiKeys, bytes, askTimeout, metricsWithoutAuth, requestTimeout);
  }

  /** These timeouts (the request timeout must stay the longer). */
  public GatewaySettings withTimeouts(Duration ask, Duration request) {
    return new GatewaySettings(host, port, apiKeys, maxBodyBytes, ask, metricsWithoutAuth, request);
  }

  public GatewaySettings withMetricsWithoutAuth(boolean open) {
    return new GatewaySettings(host, port, apiKeys, maxBodyBytes, askTimeout, open, requestTimeout);
  }
}
