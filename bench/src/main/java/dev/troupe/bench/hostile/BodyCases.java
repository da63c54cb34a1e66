package dev.troupe.bench.hostile;

import static dev.troupe.bench.hostile.Case.any;
import static dev.troupe.bench.hostile.Case.ok;
import static dev.troupe.bench.hostile.Case.refused;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** Malformed bodies, numeric edges and encodings, on the chat and tokenizer endpoints. */
final class BodyCases {
  private BodyCases() {}

  private static Case.Action chat(String extra) {
    return t -> t.post("/v1/chat/completions", Bodies.chat(t, extra));
  }

  private static Case.Action body(String path, String json) {
    return t -> t.post(path, json.replace("MODEL", t.model));
  }

  private static Case.Action bytes(String path, byte[] body, String contentType) {
    return t ->
        t.send(
            "POST", path, Map.of("Content-Type", contentType, "Authorization", t.bearer()), body);
  }

  static List<Case> malformed() {
    String f = "malformed bodies";
    List<Case> c = new ArrayList<>();
    String[] bodies = {
      "",
      "null",
      "[]",
      "\"x\"",
      "7",
      "true",
      "{",
      "}",
      "{}}",
      "{\"messages\":}",
      "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]} trailing",
      "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}{}",
      "{'messages':[]}",
      "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],}",
      "{/*c*/\"messages\":[]}",
      "{\"messages\":[{\"role\":\"user\",\"content\":\"x\\q\"}]}",
      "{\"messages\":[{\"role\":\"user\",\"content\":\"\u0001\"}]}",
      "{\"messages\":NaN}",
      "{\"messages\":[],\"messages\":[]}",
      "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"n\":Infinity}",
      "{\"messages\":" + "[".repeat(2000) + "]".repeat(2000) + "}",
      "{\"messages\":[{\"role\":\"user\",\"content\":\"x\",\"deep\":"
          + "{\"a\":".repeat(990)
          + "1"
          + "}".repeat(990)
          + "}]}",
      "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"x\":"
          + "[".repeat(200_000)
          + "]".repeat(200_000)
          + "}",
    };
    for (String b : bodies)
      c.add(
          refused(
              f,
              "chat body " + b.substring(0, Math.min(40, b.length())).replace("\n", " "),
              body("/v1/chat/completions", b)));
    for (String b : new String[] {"", "null", "{", "[1,2]"}) {
      c.add(refused(f, "/tokenize body " + b, body("/tokenize", b)));
      c.add(refused(f, "/detokenize body " + b, body("/detokenize", b)));
    }
    byte[] chat =
        "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}".getBytes(StandardCharsets.UTF_8);
    c.add(refused(f, "text/plain", bytes("/v1/chat/completions", chat, "text/plain")));
    c.add(
        refused(
            f,
            "application/x-www-form-urlencoded",
            bytes(
                "/v1/chat/completions",
                "messages=x".getBytes(StandardCharsets.UTF_8),
                "application/x-www-form-urlencoded")));
    c.add(
        refused(
            f,
            "no content type",
            t ->
                t.send("POST", "/v1/chat/completions", Map.of("Authorization", t.bearer()), chat)));
    c.add(
        any(
            f,
            "a UTF-8 BOM before the object",
            bytes(
                "/v1/chat/completions",
                concat(new byte[] {(byte) 0xef, (byte) 0xbb, (byte) 0xbf}, chat),
                "application/json")));
    c.add(
        refused(
            f,
            "invalid UTF-8 bytes in a string",
            bytes(
                "/v1/chat/completions",
                "{\"messages\":[{\"role\":\"user\",\"content\":\"\u00ff\u00fe\"}]}"
                    .getBytes(StandardCharsets.ISO_8859_1),
                "application/json")));
    c.add(
        any(
            f,
            "UTF-16 body declared as such",
            bytes(
                "/v1/chat/completions",
                "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}"
                    .getBytes(StandardCharsets.UTF_16),
                "application/json; charset=utf-16")));
    c.add(
        refused(
            f,
            "gzip content encoding of gzip bytes (not decoded, as vLLM)",
            t ->
                t.send(
                    "POST",
                    "/v1/chat/completions",
                    Map.of(
                        "Content-Type",
                        "application/json",
                        "Content-Encoding",
                        "gzip",
                        "Authorization",
                        t.bearer()),
                    gzip(chat))));
    c.add(
        any(
            f,
            "gzip content encoding of plain bytes (read as sent, as vLLM)",
            t ->
                t.send(
                    "POST",
                    "/v1/chat/completions",
                    Map.of(
                        "Content-Type",
                        "application/json",
                        "Content-Encoding",
                        "gzip",
                        "Authorization",
                        t.bearer()),
                    chat)));
    c.add(
        refused(
            f,
            "65 MiB body (413)",
            t -> t.post("/v1/chat/completions", "{\"x\":\"" + "a".repeat(65 << 20) + "\"}")));
    c.add(
        refused(
            f,
            "Content-Length larger than the body, then close",
            t ->
                t.raw(
                    "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: "
                        + t.bearer()
                        + "\r\nContent-Length: 1000\r\n\r\n{\"mess")));
    c.add(
        refused(
            f,
            "Content-Length of 10^15",
            t ->
                t.raw(
                    "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: "
                        + t.bearer()
                        + "\r\nContent-Length: 1000000000000000\r\n\r\n{}")));
    c.add(
        refused(
            f,
            "negative Content-Length",
            t ->
                t.raw(
                    "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: -5\r\n\r\n{}")));
    c.add(
        refused(
            f,
            "two Content-Lengths",
            t ->
                t.raw(
                    "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}")));
    for (String size : new String[] {"ZZZ", "10000000000000000", "-1", "1;ext=" + "x".repeat(1000)})
      c.add(
          refused(
              f,
              "chunk size " + size.substring(0, Math.min(20, size.length())),
              t ->
                  t.raw(
                      "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: "
                          + t.bearer()
                          + "\r\nTransfer-Encoding: chunked\r\n\r\n"
                          + size
                          + "\r\nabc\r\n0\r\n\r\n")));
    c.add(
        refused(
            f,
            "chunked and Content-Length both",
            t ->
                t.raw(
                    "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n")));
    c.add(
        refused(
            f,
            "100,000 one-byte chunks of nothing useful",
            t ->
                t.raw(
                    "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: "
                        + t.bearer()
                        + "\r\nTransfer-Encoding: chunked\r\n\r\n"
                        + "1\r\n \r\n".repeat(100_000)
                        + "0\r\n\r\n")));
    String[][] wrongTypes = {
      {"stream", "7"}, {"messages", "\"x\""}, {"n", "\"abc\""}, {"temperature", "true"},
      {"max_tokens", "1.5"}, {"stop", "{}"}, {"tools", "{}"}, {"logit_bias", "[1]"},
      {"seed", "\"\""}, {"user", "5"}, {"response_format", "\"json\""}, {"stream_options", "[]"},
    };
    for (String[] w : wrongTypes)
      c.add(refused(f, w[0] + ": " + w[1], chat(",\"" + w[0] + "\":" + w[1])));
    return c;
  }

  private static byte[] gzip(byte[] plain) throws java.io.IOException {
    java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
    try (java.util.zip.GZIPOutputStream z = new java.util.zip.GZIPOutputStream(out)) {
      z.write(plain);
    }
    return out.toByteArray();
  }

  private static byte[] concat(byte[] a, byte[] b) {
    byte[] out = new byte[a.length + b.length];
    System.arraycopy(a, 0, out, 0, a.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }

  static List<Case> numeric() {
    String f = "numeric edges";
    List<Case> c = new ArrayList<>();
    String[] refusedFields = {
      "\"max_tokens\":0",
      "\"max_tokens\":-1",
      "\"max_tokens\":2147483647",
      "\"max_completion_tokens\":2147483647",
      "\"max_tokens\":2147483648",
      "\"max_tokens\":9223372036854775808",
      "\"max_tokens\":1e309",
      "\"max_tokens\":1.5",
      "\"temperature\":-1",
      "\"temperature\":1e309",
      "\"temperature\":\"inf\"",
      "\"temperature\":\"NaN\"",
      "\"top_p\":0",
      "\"top_p\":1.0000001",
      "\"top_k\":-2",
      "\"min_p\":1.5",
      "\"n\":0",
      "\"n\":16385",
      "\"n\":2147483648",
      "\"seed\":18446744073709551616",
      "\"seed\":-9223372036854775809",
      "\"logprobs\":true,\"top_logprobs\":21",
      "\"logprobs\":true,\"top_logprobs\":-1",
      "\"prompt_logprobs\":21",
      "\"presence_penalty\":3",
      "\"frequency_penalty\":-3",
      "\"repetition_penalty\":0",
      "\"repetition_penalty\":-1",
      "\"min_tokens\":-1",
      "\"max_tokens\":2,\"min_tokens\":3",
      "\"length_penalty\":1e309",
      "\"truncate_prompt_tokens\":-2",
      "\"priority\":5",
      "\"logit_bias\":{\"-1\":1}",
      "\"logit_bias\":{\"abc\":1}",
      "\"logit_bias\":{\"99999999999\":1}",
      "\"logit_bias\":{\"5\":1e400}",
      "\"stop_token_ids\":[-1]",
      "\"allowed_token_ids\":[]",
      "\"allowed_token_ids\":[999999999]",
      "\"n\":64",
    };
    for (String field : refusedFields) c.add(refused(f, field, chat("," + field)));
    String[] acceptedFields = {
      "\"max_tokens\":1",
      "\"temperature\":0",
      "\"temperature\":2",
      "\"top_k\":-1",
      "\"seed\":-9223372036854775808",
      "\"seed\":9223372036854775807",
      "\"logit_bias\":{\"5\":1000}",
      "\"truncate_prompt_tokens\":-1",
      "\"top_p\":1e-300",
      "\"temperature\":1e-300",
      "\"logprobs\":true,\"top_logprobs\":20",
    };
    for (String field : acceptedFields) c.add(ok(f, field, chat("," + field)));
    c.add(
        refused(
            f,
            "/detokenize with a token id over the vocabulary",
            body("/detokenize", "{\"model\":\"MODEL\",\"tokens\":[2147483647]}")));
    c.add(
        refused(
            f,
            "/detokenize with -1",
            body("/detokenize", "{\"model\":\"MODEL\",\"tokens\":[-1]}")));
    c.add(
        refused(
            f,
            "/detokenize with 2^31",
            body("/detokenize", "{\"model\":\"MODEL\",\"tokens\":[2147483648]}")));
    return c;
  }

  static List<Case> encodings() {
    String f = "encodings";
    List<Case> c = new ArrayList<>();
    String[] contents = {
      "\\ud800",
      "\\udc00x",
      "a\\u0000b",
      "\\u202e\\u202d",
      "\\ud83d\\ude00",
      "\\ufeff",
      "\\u200b\\u200b\\u200b",
      "\\uffff",
      "x".repeat(1) + "\\u0085\\u2028\\u2029",
    };
    for (String s : contents) {
      c.add(
          any(
              f,
              "content " + s,
              t -> t.post("/v1/chat/completions", Bodies.chat(t, "").replace("Hello", s))));
      c.add(
          any(
              f,
              "/tokenize prompt " + s,
              t ->
                  t.post("/tokenize", "{\"model\":\"" + t.model + "\",\"prompt\":\"" + s + "\"}")));
    }
    c.add(any(f, "stop string with a lone surrogate", chat(",\"stop\":[\"\\ud800\"]")));
    c.add(any(f, "bad word with a lone surrogate", chat(",\"bad_words\":[\"\\udbff\"]")));
    c.add(
        any(
            f,
            "tool name with a lone surrogate",
            chat(
                ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\\ud800\",\"parameters\":{}}}]")));
    c.add(
        refused(
            f,
            "model name with a lone surrogate",
            t -> t.post("/v1/chat/completions", Bodies.chatWithModel("\\ud800", ""))));
    c.add(refused(f, "invalid escape \\x41", chat(",\"user\":\"\\x41\"")));
    c.add(refused(f, "truncated escape \\u12", chat(",\"user\":\"\\u12\"")));
    c.add(
        any(
            f,
            "a 1 MB emoji string",
            t ->
                t.post(
                    "/v1/chat/completions",
                    Bodies.chat(t, "").replace("Hello", "\\ud83d\\ude00".repeat(100_000)))));
    c.add(
        refused(
            f,
            "overlong UTF-8 (C0 80)",
            bytes(
                "/v1/chat/completions",
                "{\"messages\":[{\"role\":\"user\",\"content\":\"\u00c0\u0080\"}]}"
                    .getBytes(StandardCharsets.ISO_8859_1),
                "application/json")));
    c.add(
        refused(
            f,
            "CESU-8 surrogate bytes",
            bytes(
                "/v1/chat/completions",
                "{\"messages\":[{\"role\":\"user\",\"content\":\"\u00ed\u00a0\u0080\"}]}"
                    .getBytes(StandardCharsets.ISO_8859_1),
                "application/json")));
    c.add(
        any(
            f,
            "role with a lone surrogate",
            t ->
                t.post(
                    "/v1/chat/completions",
                    Bodies.chat(t, "").replace("\"user\"", "\"us\\ud800er\""))));
    return c;
  }

  static List<Case> arrays() {
    String f = "huge arrays";
    List<Case> c = new ArrayList<>();
    String msg = "{\"role\":\"user\",\"content\":\"Hi\"}";
    String tool = "{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":{}}}";
    int[] scales = {1, 10};
    for (int k : scales) {
      c.add(
          refused(
              f,
              "messages x" + (10_001 * k),
              t ->
                  t.post(
                      "/v1/chat/completions",
                      "{\"model\":\""
                          + t.model
                          + "\",\"max_tokens\":2,\"messages\":"
                          + Bodies.array(10_001 * k, i -> msg)
                          + "}")));
      c.add(
          refused(
              f,
              "content parts x" + (1001 * k),
              t ->
                  t.post(
                      "/v1/chat/completions",
                      "{\"model\":\""
                          + t.model
                          + "\",\"max_tokens\":2,\"messages\":[{\"role\":\"user\",\"content\":"
                          + Bodies.array(1001 * k, i -> "{\"type\":\"text\",\"text\":\"a\"}")
                          + "}]}")));
      c.add(
          refused(
              f, "tools x" + (1001 * k), chat(",\"tools\":" + Bodies.array(1001 * k, i -> tool))));
      c.add(
          refused(
              f,
              "documents x" + (1001 * k),
              chat(",\"documents\":" + Bodies.array(1001 * k, i -> "{\"text\":\"d\"}"))));
      c.add(
          refused(
              f,
              "stop x" + (129 * k),
              chat(",\"stop\":" + Bodies.array(129 * k, i -> "\"s" + i + "\""))));
      c.add(
          refused(
              f,
              "stop_token_ids x" + (1025 * k),
              chat(",\"stop_token_ids\":" + Bodies.array(1025 * k, i -> "1"))));
      c.add(
          refused(
              f,
              "bad_words x" + (1025 * k),
              chat(",\"bad_words\":" + Bodies.array(1025 * k, i -> "\"w\""))));
      c.add(
          refused(
              f,
              "logit_bias x" + (4097 * k),
              chat(",\"logit_bias\":" + Bodies.object(4097 * k, i -> "\"" + i + "\":1"))));
      c.add(
          refused(
              f,
              "logits_processors x" + (65 * k),
              chat(",\"logits_processors\":" + Bodies.array(65 * k, i -> "\"a.B\""))));
      c.add(
          refused(
              f,
              "engine_xargs x" + (257 * k),
              chat(",\"engine_xargs\":" + Bodies.object(257 * k, i -> "\"k" + i + "\":1"))));
    }
    c.add(
        refused(
            f,
            "bad_words x1,000,000",
            chat(",\"bad_words\":" + Bodies.array(1_000_000, i -> "\"w\""))));
    c.add(
        refused(
            f,
            "allowed_token_ids x1,000,000",
            chat(",\"allowed_token_ids\":" + Bodies.array(1_000_000, i -> "1"))));
    c.add(
        refused(
            f,
            "one stop string of 5,000 characters",
            chat(",\"stop\":[\"" + "s".repeat(5000) + "\"]")));
    c.add(
        refused(
            f,
            "one bad word of 70,000 characters",
            chat(",\"bad_words\":[\"" + "w".repeat(70_000) + "\"]")));
    c.add(
        refused(
            f,
            "/tokenize messages x10,001",
            t ->
                t.post(
                    "/tokenize",
                    "{\"model\":\""
                        + t.model
                        + "\",\"messages\":"
                        + Bodies.array(10_001, i -> msg)
                        + "}")));
    c.add(
        refused(
            f,
            "/tokenize tools x1,001",
            t ->
                t.post(
                    "/tokenize",
                    "{\"model\":\""
                        + t.model
                        + "\",\"messages\":["
                        + msg
                        + "],\"tools\":"
                        + Bodies.array(1001, i -> tool)
                        + "}")));
    c.add(
        refused(
            f,
            "/detokenize tokens x1,048,577",
            t ->
                t.post(
                    "/detokenize",
                    "{\"model\":\""
                        + t.model
                        + "\",\"tokens\":"
                        + Bodies.array((1 << 20) + 1, i -> "1")
                        + "}")));
    c.add(
        ok(
            f,
            "stop at its limit (128)",
            chat(",\"stop\":" + Bodies.array(128, i -> "\"zq" + i + "\""))));
    c.add(
        ok(
            f,
            "bad_words at its limit (1,024)",
            chat(",\"bad_words\":" + Bodies.array(1024, i -> "\"zq" + i + "\""))));
    c.add(
        ok(
            f,
            "logit_bias at its limit (4,096)",
            chat(",\"logit_bias\":" + Bodies.object(4096, i -> "\"" + i + "\":0.5"))));
    c.add(
        any(
            f,
            "messages at their limit (10,000)",
            t ->
                t.post(
                    "/v1/chat/completions",
                    "{\"model\":\""
                        + t.model
                        + "\",\"max_tokens\":2,\"messages\":"
                        + Bodies.array(10_000, i -> "{\"role\":\"user\",\"content\":\"\"}")
                        + ",\"truncate_prompt_tokens\":-1}")));
    return c;
  }
}
