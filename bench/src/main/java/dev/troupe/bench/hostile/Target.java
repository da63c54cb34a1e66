package dev.troupe.bench.hostile;

import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;

/**
 * The node under test and the ways to talk to it: well-formed HTTP through the JDK client, and raw
 * bytes on a socket for what no client would send.
 */
final class Target {
  static final Duration LIMIT = Duration.ofSeconds(90);

  final String host = "127.0.0.1";
  final int port;
  final int managementPort;
  final int clusterPort;
  final String key;

  /** The served model's name (set once the node answers {@code /v1/models}). */
  String model = "demo";

  private final HttpClient http =
      HttpClient.newBuilder()
          .version(HttpClient.Version.HTTP_1_1)
          .connectTimeout(Duration.ofSeconds(10))
          .build();

  Target(int port, int managementPort, int clusterPort, String key) {
    this.port = port;
    this.managementPort = managementPort;
    this.clusterPort = clusterPort;
    this.key = key;
  }

  String base() {
    return "http://" + host + ":" + port;
  }

  /** POST of JSON with the key. */
  Reply post(String path, String json) throws Exception {
    return send(
        "POST",
        path,
        Map.of("Content-Type", "application/json", "Authorization", bearer()),
        json.getBytes(StandardCharsets.UTF_8));
  }

  /** GET with the key. */
  Reply get(String path) throws Exception {
    return send("GET", path, Map.of("Authorization", bearer()), null);
  }

  String bearer() {
    return "Bearer " + key;
  }

  Reply send(String method, String path, Map<String, String> headers, byte[] body)
      throws Exception {
    return send(port, method, path, headers, body);
  }

  Reply send(int toPort, String method, String path, Map<String, String> headers, byte[] body)
      throws Exception {
    HttpRequest.Builder b =
        HttpRequest.newBuilder(URI.create("http://" + host + ":" + toPort + path)).timeout(LIMIT);
    headers.forEach(b::header);
    b.method(
        method,
        body == null
            ? HttpRequest.BodyPublishers.noBody()
            : HttpRequest.BodyPublishers.ofByteArray(body));
    try {
      HttpResponse<String> r = http.send(b.build(), HttpResponse.BodyHandlers.ofString());
      return new Reply(r.statusCode(), r.body(), false);
    } catch (HttpTimeoutException e) {
      return Reply.hang();
    } catch (java.io.IOException e) {
      return Reply.closed(String.valueOf(e));
    }
  }

  /**
   * Writes {@code bytes} on a new connection, half-closes it and reads the answer to the end: the
   * first status line's code, or -1 when the server closed without one.
   */
  Reply raw(int toPort, byte[] bytes) throws Exception {
    try (Socket s = new Socket(host, toPort)) {
      s.setSoTimeout((int) LIMIT.toMillis());
      try {
        s.getOutputStream().write(bytes);
        s.shutdownOutput();
      } catch (java.io.IOException e) {
        return Reply.closed("write: " + e); // the server closed first: it refused the rest
      }
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      try {
        InputStream in = s.getInputStream();
        byte[] buf = new byte[8192];
        for (int n; (n = in.read(buf)) > 0; ) {
          if (out.size() < 1 << 20) out.write(buf, 0, n);
        }
      } catch (SocketTimeoutException e) {
        return Reply.hang();
      } catch (java.io.IOException e) {
        if (out.size() == 0) return Reply.closed("read: " + e);
      }
      String text = out.toString(StandardCharsets.ISO_8859_1);
      if (!text.startsWith("HTTP/1.")) return Reply.closed("no status line");
      int status = Integer.parseInt(text.substring(9, 12));
      int bodyAt = text.indexOf("\r\n\r\n");
      String body = bodyAt < 0 ? "" : text.substring(bodyAt + 4);
      return new Reply(status, body, false);
    }
  }

  Reply raw(String request) throws Exception {
    return raw(port, request.getBytes(StandardCharsets.ISO_8859_1));
  }
}
