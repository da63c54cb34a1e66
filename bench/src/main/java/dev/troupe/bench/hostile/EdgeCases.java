package dev.troupe.bench.hostile;

import static dev.troupe.bench.hostile.Case.any;
import static dev.troupe.bench.hostile.Case.ok;
import static dev.troupe.bench.hostile.Case.refused;

import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;

/** Auth, path and id abuse, pipelining, and junk on the cluster and management ports. */
final class EdgeCases {
  private EdgeCases() {}

  private static final List<String> PROTECTED_GETS =
      List.of(
          "/v1/models",
          "/metrics",
          "/version",
          "/v1/preview/models",
          "/v1/preview/training-jobs/x",
          "/nope");

  static List<Case> auth() {
    String f = "auth";
    List<Case> c = new ArrayList<>();
    for (String path : PROTECTED_GETS) {
      c.add(refused(f, "GET " + path + " without a key", t -> t.send("GET", path, Map.of(), null)));
      c.add(
          refused(
              f,
              "GET " + path + " with a wrong key",
              t -> t.send("GET", path, Map.of("Authorization", "Bearer wrong"), null)));
    }
    for (String path : List.of("/v1/chat/completions", "/tokenize", "/detokenize")) {
      c.add(
          refused(
              f,
              "POST " + path + " without a key",
              t ->
                  t.send(
                      "POST",
                      path,
                      Map.of("Content-Type", "application/json"),
                      Bodies.chat(t, "").getBytes(StandardCharsets.UTF_8))));
    }
    String[] headers = {
      "Bearer",
      "Bearer ",
      "Basic c2staG9zdGlsZTo=",
      "sk-hostile",
      "Bearer sk-hostile extra",
      "Token sk-hostile",
      "Bearer " + "k".repeat(7000),
      "Bearer\tsk-hostilex"
    };
    for (String h : headers)
      c.add(
          refused(
              f,
              "Authorization: " + h.substring(0, Math.min(h.length(), 30)),
              t -> t.send("GET", "/v1/models", Map.of("Authorization", h), null)));
    c.add(
        ok(
            f,
            "lowercase scheme is accepted",
            t -> t.send("GET", "/v1/models", Map.of("Authorization", "bearer " + t.key), null)));
    c.add(ok(f, "/health needs no key", t -> t.send("GET", "/health", Map.of(), null)));
    c.add(
        refused(
            f,
            "two Authorization headers, one wrong",
            t ->
                t.raw(
                    "GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer wrong\r\n"
                        + "Authorization: Bearer "
                        + t.key
                        + "\r\n\r\n")));
    c.add(
        refused(
            f,
            "key in the query string",
            t -> t.send("GET", "/v1/models?api_key=" + t.key, Map.of(), null)));
    c.add(
        refused(
            f,
            "non-ASCII bytes in the header",
            t ->
                t.raw(
                    port(t),
                    ("GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \u00e9\u00ff\r\n\r\n")
                        .getBytes(StandardCharsets.ISO_8859_1))));
    c.add(
        refused(
            f,
            "management /cluster/members without a key",
            t -> t.send(t.managementPort, "GET", "/cluster/members", Map.of(), null)));
    c.add(
        refused(
            f,
            "management /cluster/shards/ModelWorker without a key",
            t -> t.send(t.managementPort, "GET", "/cluster/shards/ModelWorker", Map.of(), null)));
    c.add(
        ok(
            f,
            "management /cluster/members with the key",
            t ->
                t.send(
                    t.managementPort,
                    "GET",
                    "/cluster/members",
                    Map.of("Authorization", t.bearer()),
                    null)));
    c.add(
        ok(
            f,
            "management /alive open",
            t -> t.send(t.managementPort, "GET", "/alive", Map.of(), null)));
    c.add(
        ok(
            f,
            "management /ready open",
            t -> t.send(t.managementPort, "GET", "/ready", Map.of(), null)));
    return c;
  }

  private static int port(Target t) {
    return t.port;
  }

  static List<Case> paths() {
    String f = "path and id abuse";
    List<Case> c = new ArrayList<>();
    String[] gets = {
      "/v1/preview/models/../../etc/passwd",
      "/v1/preview/models/%2e%2e%2f%2e%2e%2fetc%2fpasswd",
      "/v1/preview/models/%00",
      "/v1/preview/models/not-a-uuid",
      "/v1/preview/models/00000000-0000-0000-0000-000000000000",
      "/v1/preview/models/00000000-0000-0000-0000-000000000000/checkpoints",
      "/v1/preview/models/00000000-0000-0000-0000-000000000000/trajectories?limit=0",
      "/v1/preview/models/00000000-0000-0000-0000-000000000000/trajectories?limit=100000",
      "/v1/preview/models?limit=-1",
      "/v1/preview/models?limit=abc",
      "/v1/preview/models?after=%FF%FE",
      "/v1/preview/training-jobs/" + "a".repeat(1500),
      "/v1//models",
      "/v1/models/../models",
      "/%C0%AE%C0%AE/",
      "/v1/chat/completions",
      "/v1/preview/models/00000000-0000-0000-0000-000000000000/trajectories/export?split=%00",
    };
    for (String p : gets)
      c.add(any(f, "GET " + p.substring(0, Math.min(60, p.length())), t -> t.get(p)));
    c.add(
        refused(
            f,
            "an invalid percent-escape in the path",
            t ->
                t.raw(
                    "GET /v1/preview/training-jobs/%ZZ HTTP/1.1\r\nHost: x\r\nAuthorization: "
                        + t.bearer()
                        + "\r\n\r\n")));
    c.add(refused(f, "a 10 KB target (414)", t -> t.get("/v1/models?q=" + "a".repeat(10_000))));
    c.add(
        refused(
            f,
            "absolute-form target to another host",
            t -> t.raw("GET http://evil.example/v1/models HTTP/1.1\r\nHost: evil\r\n\r\n")));
    for (String m : List.of("CONNECT", "TRACE", "PATCH"))
      c.add(
          refused(
              f,
              m + " /v1/models",
              t ->
                  t.raw(
                      m
                          + " /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: "
                          + t.bearer()
                          + "\r\n\r\n")));
    for (String m : List.of("BREW", "get"))
      c.add(
          Case.notImplemented(
              f,
              m + " /v1/models",
              t ->
                  t.raw(
                      m
                          + " /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: "
                          + t.bearer()
                          + "\r\n\r\n")));
    c.add(
        refused(
            f,
            "a raw space in the target",
            t -> t.raw("GET /v1/mo dels HTTP/1.1\r\nHost: x\r\n\r\n")));
    c.add(Case.notImplemented(f, "HTTP/2 preface", t -> t.raw("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")));
    c.add(refused(f, "no Host header", t -> t.raw("GET /health HTTP/1.1\r\n\r\n")));
    c.add(
        refused(
            f,
            "100 headers",
            t -> {
              StringBuilder sb = new StringBuilder("GET /health HTTP/1.1\r\nHost: x\r\n");
              for (int i = 0; i < 100; i++) sb.append("X-H").append(i).append(": v\r\n");
              return t.raw(sb.append("\r\n").toString());
            }));
    c.add(
        any(
            f,
            "X-Request-Id of 10 KB",
            t ->
                t.send(
                    "GET",
                    "/v1/models",
                    Map.of("Authorization", t.bearer(), "X-Request-Id", "r".repeat(10_000)),
                    null)));
    c.add(
        ok(
            f,
            "request_id with CRLF stays in the body",
            t ->
                t.post(
                    "/v1/chat/completions",
                    Bodies.chat(t, ",\"request_id\":\"a\\r\\nX-Evil: 1\""))));
    c.add(
        refused(
            f,
            "model name with ../",
            t -> t.post("/v1/chat/completions", Bodies.chatWithModel("../../etc/passwd", ""))));
    c.add(
        refused(
            f,
            "model name of 100 KB",
            t -> t.post("/v1/chat/completions", Bodies.chatWithModel("m".repeat(100_000), ""))));
    return c;
  }

  static List<Case> pipelining() {
    String f = "pipelining";
    List<Case> c = new ArrayList<>();
    c.add(
        ok(
            f,
            "1,000 GET /health in one write",
            t -> pipelined(t, t.port, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n", 1000)));
    c.add(
        ok(
            f,
            "20,000 minimal GET /health in one write",
            t -> pipelined(t, t.port, "GET /health HTTP/1.1\r\nHost:x\r\n\r\n", 20_000)));
    c.add(
        ok(
            f,
            "1,000 GET /alive on the management port",
            t -> pipelined(t, t.managementPort, "GET /alive HTTP/1.1\r\nHost: x\r\n\r\n", 1000)));
    c.add(
        any(
            f,
            "5,000 HTTP/1.0 requests in one write",
            t ->
                t.raw(
                    t.port,
                    "GET /health HTTP/1.0\r\n\r\n"
                        .repeat(5000)
                        .getBytes(StandardCharsets.US_ASCII))));
    c.add(
        ok(
            f,
            "50 pipelined chats",
            t -> {
              byte[] body = Bodies.chat(t, "").getBytes(StandardCharsets.UTF_8);
              String one =
                  "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      + "Authorization: "
                      + t.bearer()
                      + "\r\nContent-Length: "
                      + body.length
                      + "\r\n\r\n"
                      + new String(body, StandardCharsets.UTF_8);
              return pipelined(t, t.port, one, 50);
            }));
    c.add(
        any(
            f,
            "a malformed request amid pipelined ones",
            t ->
                t.raw(
                    t.port,
                    ("GET /health HTTP/1.1\r\nHost: x\r\n\r\n".repeat(100)
                            + "GET /he alth HTTP/1.1\r\nHost: x\r\n\r\n"
                            + "GET /health HTTP/1.1\r\nHost: x\r\n\r\n".repeat(100))
                        .getBytes(StandardCharsets.US_ASCII))));
    c.add(
        any(
            f,
            "1,000 pipelined unauthenticated /v1/models",
            t ->
                t.raw(
                    t.port,
                    "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n"
                        .repeat(1000)
                        .getBytes(StandardCharsets.US_ASCII))));
    c.add(
        any(
            f,
            "pipelined requests split at every byte boundary of a chunk",
            t -> {
              try (Socket s = new Socket(t.host, t.port)) {
                byte[] all =
                    "GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
                        .repeat(200)
                        .getBytes(StandardCharsets.US_ASCII);
                for (int i = 0; i < all.length; i += 7)
                  s.getOutputStream()
                      .write(Arrays.copyOfRange(all, i, Math.min(all.length, i + 7)));
                s.shutdownOutput();
                s.setSoTimeout(60_000);
                s.getInputStream().readAllBytes();
              }
              return new Reply(200, "", false);
            }));
    c.add(
        any(
            f,
            "pipelined garbage after a request",
            t ->
                t.raw(
                    t.port,
                    ("GET /health HTTP/1.1\r\nHost: x\r\n\r\n" + "\u0000\u00ff".repeat(5000))
                        .getBytes(StandardCharsets.ISO_8859_1))));
    c.add(
        any(
            f,
            "10,000 blank lines before a request",
            t -> t.raw("\r\n".repeat(10_000) + "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")));
    return c;
  }

  /** {@code count} copies of {@code request} in one write; 200 when all were answered 2xx. */
  static Reply pipelined(Target t, int port, String request, int count) throws Exception {
    byte[] all = request.repeat(count).getBytes(StandardCharsets.UTF_8);
    try (Socket s = new Socket(t.host, port)) {
      s.setSoTimeout((int) Target.LIMIT.toMillis());
      s.getOutputStream().write(all);
      StringBuilder tail = new StringBuilder();
      byte[] buf = new byte[65536];
      int seen = 0;
      while (seen < count) {
        int n;
        try {
          n = s.getInputStream().read(buf);
        } catch (java.net.SocketTimeoutException e) {
          return Reply.hang();
        }
        if (n < 0) break;
        tail.append(new String(buf, 0, n, StandardCharsets.ISO_8859_1));
        for (int i = tail.indexOf("HTTP/1.1 ");
            i >= 0 && tail.length() >= i + 12;
            i = tail.indexOf("HTTP/1.1 ")) {
          int status = Integer.parseInt(tail.substring(i + 9, i + 12));
          if (status >= 300) return new Reply(status, "answer " + seen, false);
          seen++;
          tail.delete(0, i + 12);
        }
      }
      return seen == count
          ? new Reply(200, count + " answered", false)
          : Reply.closed(seen + " of " + count);
    }
  }

  static List<Case> ports() {
    String f = "cluster-port junk";
    List<Case> c = new ArrayList<>();
    byte[] akka = new byte[4 + 1 + 4 + 4096];
    System.arraycopy("AKKA".getBytes(StandardCharsets.US_ASCII), 0, akka, 0, 4);
    akka[4] = 1;
    akka[5] = (byte) 0xff;
    akka[6] = (byte) 0xff;
    akka[7] = (byte) 0xff;
    akka[8] = (byte) 0x7f;
    Arrays.fill(akka, 9, akka.length, (byte) 0x2c);
    c.add(any(f, "AKKA 01 ff ff ff 7f + 4 KB", t -> junk(t.clusterPort, akka)));
    Random random = new Random(21);
    for (int i = 0; i < 4; i++) {
      byte[] r = new byte[4096];
      random.nextBytes(r);
      System.arraycopy("AKKA".getBytes(StandardCharsets.US_ASCII), 0, r, 0, 4);
      r[4] = (byte) (i % 3);
      c.add(
          any(f, "AKKA, stream " + (i % 3) + ", random bytes #" + i, t -> junk(t.clusterPort, r)));
    }
    byte[] noise = new byte[65536];
    random.nextBytes(noise);
    c.add(any(f, "64 KB of random bytes", t -> junk(t.clusterPort, noise)));
    c.add(
        any(
            f,
            "an HTTP request",
            t ->
                junk(
                    t.clusterPort,
                    "GET / HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII))));
    c.add(
        any(
            f,
            "a TLS ClientHello",
            t ->
                junk(
                    t.clusterPort,
                    new byte[] {
                      0x16, 0x03, 0x01, 0x00, (byte) 0xa5, 0x01, 0x00, 0x00, (byte) 0xa1, 0x03, 0x03
                    })));
    c.add(
        any(
            f,
            "100 connections opened and closed",
            t -> {
              for (int i = 0; i < 100; i++) new Socket(t.host, t.clusterPort).close();
              return new Reply(200, "", false);
            }));
    c.add(any(f, "random bytes on the management port", t -> t.raw(t.managementPort, noise)));
    c.add(any(f, "random bytes on the API port", t -> t.raw(t.port, noise)));
    return c;
  }

  private static Reply junk(int port, byte[] bytes) throws Exception {
    try (Socket s = new Socket("127.0.0.1", port)) {
      s.getOutputStream().write(bytes);
      Thread.sleep(300);
    } catch (java.io.IOException e) {
      return Reply.closed(e.toString());
    }
    return new Reply(200, "written", false);
  }
}
