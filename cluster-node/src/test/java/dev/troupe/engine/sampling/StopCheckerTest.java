package dev.troupe.engine.sampling;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

class StopCheckerTest {

  // 0..4 words, 5 = eos, 6 = generation-config eos, 7 = "o w" in one token
  private static final List<String> VOCAB =
      List.of("Hel", "lo", " wor", "ld", "!", "<eos>", "<eot>", "o w", "a", "b");
  private static final ListTokenizer TOK = new ListTokenizer(VOCAB);
  private static final EosTokens EOS = new EosTokens(5, Set.of(6));

  private record Run(String streamed, String text, StopChecker.Finish finish, int steps) {}

  private static Run run(Params p, int... tokens) {
    ChoiceStops c = new ChoiceStops(p.build(), EOS, TOK.newDetokenizer(new int[0], true, true));
    StringBuilder streamed = new StringBuilder();
    int steps = 0;
    for (int t : tokens) {
      StopChecker.Update u = c.append(t);
      steps++;
      // streamed text is always a prefix of the text (never retracted)
      streamed.append(u.delta());
      assertTrue(c.text().startsWith(streamed.toString()) || u.finished(), "retracted");
      if (u.finished()) break;
    }
    return new Run(streamed.toString(), c.text(), c.finish(), steps);
  }

  @Test
  void stopStringAcrossTokensCutsBeforeIt() {
    Params p = new Params();
    p.stop = List.of("o w");
    Run r = run(p, 0, 1, 2, 3);
    assertEquals("Hell", r.text());
    assertEquals("Hell", r.streamed());
    assertEquals(3, r.steps());
    assertEquals(FinishReason.STOP, r.finish().reason());
    assertEquals("o w", r.finish().stopReason());
  }

  @Test
  void streamingHoldsBackOnlyAPossibleStopPrefix() {
    Params p = new Params();
    p.stop = List.of("o w");
    ChoiceStops c = new ChoiceStops(p.build(), EOS, TOK.newDetokenizer(new int[0], true, true));
    assertEquals("Hel", c.append(0).delta());
    assertEquals("l", c.append(1).delta()); // "o" may start "o w"
    assertEquals("o", c.append(4).delta().substring(0, 1)); // "!" rules it out: "o!"
    assertEquals("Hello!", c.text());
  }

  @Test
  void includeStopStrKeepsTheStopString() {
    Params p = new Params();
    p.stop = List.of("o w");
    p.includeStop = true;
    Run r = run(p, 0, 1, 2, 3);
    assertEquals("Hello w", r.text());
    assertEquals("Hello w", r.streamed());
  }

  @Test
  void firstListedStopWinsNotTheEarliestPosition() {
    Params p = new Params();
    p.stop = List.of("w", "o");
    Run r = run(p, 0, 7); // "Helo w": "w" listed first
    assertEquals("Helo ", r.text());
    assertEquals("w", r.finish().stopReason());
  }

  @Test
  void eosEndsWithNullStopReasonAndNoText() {
    Run r = run(new Params(), 0, 5, 1);
    assertEquals("Hel", r.text());
    assertEquals(2, r.steps());
    assertEquals(FinishReason.STOP, r.finish().reason());
    assertNull(r.finish().stopReason());
    Params p = new Params();
    p.includeStop = true;
    assertEquals("Hel<eos>", run(p, 0, 5).text());
  }

  @Test
  void stopTokenIdsAndGenerationEosReportTheId() {
    Params p = new Params();
    p.stopTokenIds = List.of(4);
    Run r = run(p, 0, 4);
    assertEquals("Hel", r.text());
    assertEquals(4, r.finish().stopReason());
    r = run(new Params(), 0, 6);
    assertEquals(6, r.finish().stopReason());
    Params ignore = new Params();
    ignore.ignoreEos = true;
    r = run(ignore, 0, 6, 5, 1);
    assertNull(r.finish()); // neither EOS kind stops under ignore_eos
    assertEquals("Hel<eot><eos>lo", r.text());
  }

  @Test
  void lengthWinsOverEosOnTheLastToken() {
    Params p = new Params();
    p.maxTokens = 2;
    Run r = run(p, 0, 5);
    assertEquals(FinishReason.LENGTH, r.finish().reason());
    assertEquals("Hel<eos>", r.text()); // not stop-terminated: the token's text stays
    r = run(p, 0, 1, 1);
    assertEquals(2, r.steps());
    assertEquals("length", r.finish().reason().name().toLowerCase(java.util.Locale.ROOT));
  }

  @Test
  void stopStringOverridesLengthOnTheSameStep() {
    Params p = new Params();
    p.maxTokens = 2;
    p.stop = List.of("lo");
    Run r = run(p, 0, 1);
    assertEquals(FinishReason.STOP, r.finish().reason());
    assertEquals("Hel", r.text());
  }

  @Test
  void nothingButLengthStopsBeforeMinTokens() {
    Params p = new Params();
    p.minTokens = 3;
    p.stop = List.of("Hel", "lo");
    p.stopTokenIds = List.of(4);
    // EOS at output 2 and "lo" completed at output 3 come too early; stop token 4 at 4 stops
    Run r = run(p, 0, 5, 1, 4);
    assertEquals(4, r.finish().stopReason());
    assertEquals("Hel<eos>lo", r.text());
    // a stop string completed by the (min_tokens + 1)-th token is caught; the early "Hel" is not
    r = run(p, 0, 3, 3, 1);
    assertEquals(FinishReason.STOP, r.finish().reason());
    assertEquals("Helldld", r.text());
    assertEquals("lo", r.finish().stopReason());
    assertEquals(4, r.steps());
  }

  @Test
  void abortFlushesHeldText() {
    Params p = new Params();
    p.stop = List.of("o w");
    ChoiceStops c = new ChoiceStops(p.build(), EOS, TOK.newDetokenizer(new int[0], true, true));
    c.append(0);
    c.append(1);
    StopChecker.Update u = c.abort();
    assertEquals("o", u.delta());
    assertEquals("abort", u.finish().reason().name().toLowerCase(java.util.Locale.ROOT));
  }

  /** Streams random outputs and compares with a naive whole-text reference. */
  @Test
  void randomStreamsMatchANaiveReference() {
    List<String> vocab = List.of("a", "b", "ab", "ba", "c", "abc", "<e>");
    ListTokenizer tok = new ListTokenizer(vocab);
    EosTokens eos = new EosTokens(6, Set.of());
    Random r = new Random(17);
    List<String> pool = List.of("ab", "bca", "cc", "a", "bab", "abcab");
    for (int trial = 0; trial < 2000; trial++) {
      Params p = new Params();
      p.maxTokens = 1 + r.nextInt(12);
      p.minTokens = r.nextInt(3);
      p.includeStop = r.nextBoolean();
      List<String> stops = new ArrayList<>();
      for (int k = r.nextInt(3); k > 0; k--) stops.add(pool.get(r.nextInt(pool.size())));
      p.stop = stops;
      int[] tokens = r.ints(15, 0, vocab.size()).toArray();

      ChoiceStops c = new ChoiceStops(p.build(), eos, tok.newDetokenizer(new int[0], true, true));
      StringBuilder streamed = new StringBuilder();
      for (int t : tokens) {
        StopChecker.Update u = c.append(t);
        streamed.append(u.delta());
        if (u.finished()) break;
      }
      String[] expected = reference(p, tokens, vocab, 6);
      String label = "trial " + trial + " stops " + stops + " " + java.util.Arrays.toString(tokens);
      assertEquals(expected[0], c.text(), label);
      if (c.finished()) assertEquals(expected[0], streamed.toString(), label);
      assertTrue(c.text().startsWith(streamed.toString()), label);
      assertEquals(
          expected[1],
          c.finish() == null ? null : c.finish().reason().name().toLowerCase(java.util.Locale.ROOT),
          label);
    }
  }

  /** Returns {text, finish_reason}: a direct transcription of the rules on the whole text. */
  private static String[] reference(Params p, int[] tokens, List<String> vocab, int eos) {
    String text = "";
    for (int i = 0; i < tokens.length; i++) {
      int n = i + 1;
      boolean length = n >= p.maxTokens;
      boolean eosStop = !length && n >= p.minTokens && tokens[i] == eos;
      String before = text;
      if (!eosStop || p.includeStop) text = text + vocab.get(tokens[i]);
      if (n > p.minTokens && text.length() > before.length()) {
        for (String s : p.stop) {
          int found = -1;
          for (int at = 0; at + s.length() <= text.length(); at++) {
            if (at + s.length() > before.length() && text.startsWith(s, at)) {
              found = at;
              break;
            }
          }
          if (found >= 0) {
            text = text.substring(0, p.includeStop ? found + s.length() : found);
            return new String[] {text, "stop"};
          }
        }
      }
      if (length) return new String[] {text, "length"};
      if (eosStop) return new String[] {text, "stop"};
    }
    return new String[] {text, null};
  }
}
