package dev.troupe.bench.llamacpp;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.function.Predicate;

/**
 * The decode part of one streamed completion as its client sees it: the time from the first
 * server-sent event that carries tokens to the last one. The first event comes with the step that
 * prefilled the prompt, so the interval holds the decode steps only, as {@code EngineLoop} times
 * them, with no prefill in it (a figure taken as the difference of two requests' wall times also
 * carries the difference of their two prefills, which on a loaded machine scatter by hundreds of
 * milliseconds).
 *
 * @param seconds from the first event's arrival to the last one's
 * @param events how many events carried tokens
 * @param last the last such event's JSON
 */
record StreamedDecode(double seconds, int events, String last) {

  /** Reads an SSE body to its end; {@code carriesTokens} picks the events that count. */
  static StreamedDecode read(InputStream body, Predicate<String> carriesTokens) throws IOException {
    long first = 0, last = 0;
    int events = 0;
    String lastJson = "";
    try (BufferedReader in =
        new BufferedReader(new InputStreamReader(body, StandardCharsets.UTF_8))) {
      for (String line; (line = in.readLine()) != null; ) {
        if (!line.startsWith("data: {")) continue;
        String json = line.substring(6);
        if (!carriesTokens.test(json)) continue;
        long now = System.nanoTime();
        if (events++ == 0) first = now;
        last = now;
        lastJson = json;
      }
    }
    if (events < 2) throw new IOException("a stream of " + events + " token events");
    return new StreamedDecode((last - first) / 1e9, events, lastJson);
  }
}
