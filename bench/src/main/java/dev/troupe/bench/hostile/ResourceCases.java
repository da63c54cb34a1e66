package dev.troupe.bench.hostile;

import static dev.troupe.bench.hostile.Case.any;
import static dev.troupe.bench.hostile.Case.ok;
import static dev.troupe.bench.hostile.Case.refused;

import java.io.InputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/** Requests that try to hold a replica, a connection or memory. */
final class ResourceCases {
  private ResourceCases() {}

  private static Case.Action chat(String extra) {
    return t -> t.post("/v1/chat/completions", Bodies.chat(t, extra));
  }

  /** A request whose preparation takes seconds: a template that loops to its render budget. */
  static String heavy(Target t) {
    return "{\"model\":\""
        + t.model
        + "\",\"messages\":"
        + Bodies.MESSAGES
        + ",\"max_tokens\":4,\"chat_template\":\"{% for i in range(100000000) %}{% endfor %}\"}";
  }

  /** Sends {@code body} on a raw connection and closes it after {@code millis}, unanswered. */
  static void abandon(Target t, String body, long millis) throws Exception {
    byte[] b = body.getBytes(StandardCharsets.UTF_8);
    try (Socket s = new Socket(t.host, t.port)) {
      s.getOutputStream()
          .write(
              ("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      + "Authorization: "
                      + t.bearer()
                      + "\r\nContent-Length: "
                      + b.length
                      + "\r\n\r\n")
                  .getBytes(StandardCharsets.US_ASCII));
      s.getOutputStream().write(b);
      Thread.sleep(millis);
    }
  }

  static List<Case> all() {
    String f = "resource abuse";
    List<Case> c = new ArrayList<>();
    c.add(
        ok(
            f,
            "3 heavy requests abandoned after 1 s, then a normal chat",
            t -> {
              List<CompletableFuture<Void>> gone = new ArrayList<>();
              for (int i = 0; i < 3; i++)
                gone.add(
                    CompletableFuture.runAsync(
                        () -> {
                          try {
                            abandon(t, heavy(t), 1000);
                          } catch (Exception e) {
                            throw new IllegalStateException(e);
                          }
                        }));
              for (CompletableFuture<Void> g : gone) g.get(60, TimeUnit.SECONDS);
              return t.post("/v1/chat/completions", Bodies.chat(t, ""));
            }));
    c.add(
        ok(
            f,
            "20 requests with 1,000,000 bad words (refused at the gateway), then a chat",
            t -> {
              String body =
                  Bodies.chat(t, ",\"bad_words\":" + Bodies.array(1_000_000, i -> "\"w\""));
              for (int i = 0; i < 20; i++) abandon(t, body, 50);
              return t.post("/v1/chat/completions", Bodies.chat(t, ""));
            }));
    c.add(
        ok(
            f,
            "30 concurrent streamed chats",
            t -> {
              List<CompletableFuture<Reply>> all = new ArrayList<>();
              for (int i = 0; i < 30; i++)
                all.add(
                    CompletableFuture.supplyAsync(
                        () -> {
                          try {
                            return t.post(
                                "/v1/chat/completions",
                                Bodies.chat(t, ",\"stream\":true,\"max_tokens\":16"));
                          } catch (Exception e) {
                            return Reply.closed(e.toString());
                          }
                        }));
              Reply worst = new Reply(200, "", false);
              for (CompletableFuture<Reply> r : all) {
                Reply x = r.get(120, TimeUnit.SECONDS);
                if (x.status() != 200) worst = x;
              }
              return worst;
            }));
    c.add(
        ok(
            f,
            "50 streams closed after their first byte, then a chat",
            t -> {
              HttpClient http = HttpClient.newHttpClient();
              for (int i = 0; i < 50; i++) {
                HttpResponse<InputStream> r =
                    http.send(
                        HttpRequest.newBuilder(URI.create(t.base() + "/v1/chat/completions"))
                            .header("Content-Type", "application/json")
                            .header("Authorization", t.bearer())
                            .POST(
                                HttpRequest.BodyPublishers.ofString(
                                    Bodies.chat(t, ",\"stream\":true,\"max_tokens\":200")))
                            .build(),
                        HttpResponse.BodyHandlers.ofInputStream());
                try (InputStream in = r.body()) {
                  in.read();
                }
              }
              return t.post("/v1/chat/completions", Bodies.chat(t, ""));
            }));
    c.add(
        any(
            f,
            "prompt_logprobs 20 on a long prompt",
            t ->
                t.post(
                    "/v1/chat/completions",
                    Bodies.chat(t, ",\"prompt_logprobs\":20,\"max_tokens\":1")
                        .replace("Hello", "The quick brown fox. ".repeat(300)))));
    c.add(refused(f, "n over max-num-seqs", chat(",\"n\":33,\"temperature\":1")));
    c.add(any(f, "beam search width 32", chat(",\"use_beam_search\":true,\"n\":32")));
    c.add(
        any(
            f,
            "n 32 with logprobs 20",
            chat(
                ",\"n\":32,\"temperature\":1,\"logprobs\":true,\"top_logprobs\":20,\"max_tokens\":16")));
    c.add(
        any(
            f,
            "a slow client: headers a byte per 10 ms",
            t -> {
              try (Socket s = new Socket(t.host, t.port)) {
                byte[] req =
                    "GET /health HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII);
                for (byte b : req) {
                  s.getOutputStream().write(b);
                  Thread.sleep(10);
                }
                s.setSoTimeout(30_000);
                byte[] head = new byte[12];
                int n = s.getInputStream().read(head);
                return n < 12
                    ? Reply.closed("short")
                    : new Reply(
                        Integer.parseInt(new String(head, 9, 3, StandardCharsets.US_ASCII)),
                        "",
                        false);
              }
            }));
    c.add(
        any(
            f,
            "200 idle connections held for 2 s",
            t -> {
              List<Socket> open = new ArrayList<>();
              try {
                for (int i = 0; i < 200; i++) open.add(new Socket(t.host, t.port));
                Thread.sleep(2000);
              } finally {
                for (Socket s : open) s.close();
              }
              return t.get("/v1/models");
            }));
    c.add(
        refused(
            f,
            "a 200 MB chunked body (413)",
            t -> {
              try (Socket s = new Socket(t.host, t.port)) {
                s.setSoTimeout(60_000);
                s.getOutputStream()
                    .write(
                        ("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: "
                                + t.bearer()
                                + "\r\nTransfer-Encoding: chunked\r\n\r\n")
                            .getBytes(StandardCharsets.US_ASCII));
                byte[] chunk =
                    ("100000\r\n" + "a".repeat(0x100000) + "\r\n")
                        .getBytes(StandardCharsets.US_ASCII);
                try {
                  for (int i = 0; i < 200; i++) s.getOutputStream().write(chunk);
                } catch (java.io.IOException e) {
                  // the server answered and closed: read its answer
                }
                byte[] head = new byte[12];
                int n = s.getInputStream().read(head);
                return n < 12
                    ? Reply.closed("closed")
                    : new Reply(
                        Integer.parseInt(new String(head, 9, 3, StandardCharsets.US_ASCII)),
                        "",
                        false);
              } catch (java.io.IOException e) {
                return Reply.closed(e.toString());
              }
            }));
    c.add(
        any(
            f,
            "Expect: 100-continue with a 64 MiB declared body, never sent",
            t ->
                t.raw(
                    "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: "
                        + t.bearer()
                        + "\r\nExpect: 100-continue\r\nContent-Length: 67108864\r\n\r\n")));
    c.add(
        ok(
            f,
            "100 chats in a row on one connection",
            t -> {
              Reply last = null;
              for (int i = 0; i < 100; i++)
                last = t.post("/v1/chat/completions", Bodies.chat(t, ",\"max_tokens\":1"));
              return last;
            }));
    c.add(ok(f, "/metrics after all that", t -> t.get("/metrics")));
    c.add(
        any(
            f,
            "a request timeout: a stream left unread for 5 s",
            t -> {
              HttpResponse<InputStream> r =
                  HttpClient.newHttpClient()
                      .send(
                          HttpRequest.newBuilder(URI.create(t.base() + "/v1/chat/completions"))
                              .timeout(Duration.ofSeconds(60))
                              .header("Content-Type", "application/json")
                              .header("Authorization", t.bearer())
                              .POST(
                                  HttpRequest.BodyPublishers.ofString(
                                      Bodies.chat(
                                          t,
                                          ",\"stream\":true,\"max_tokens\":100,\"ignore_eos\":true")))
                              .build(),
                          HttpResponse.BodyHandlers.ofInputStream());
              Thread.sleep(5000);
              try (InputStream in = r.body()) {
                in.readAllBytes();
              }
              return new Reply(r.statusCode(), "", false);
            }));
    return c;
  }
}
