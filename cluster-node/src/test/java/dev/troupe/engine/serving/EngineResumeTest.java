package dev.troupe.engine.serving;

import static dev.troupe.engine.serving.Driver.finish;
import static dev.troupe.engine.serving.Driver.text;
import static dev.troupe.engine.serving.Driver.tokens;
import static dev.troupe.engine.serving.Driver.usage;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.engine.core.EngineSettings;
import dev.troupe.engine.core.Rejection;
import dev.troupe.engine.output.RequestUpdate;
import dev.troupe.engine.output.RequestUpdate.ChoiceUpdate;
import dev.troupe.engine.output.RequestUpdate.LogprobsText;
import dev.troupe.protocol.cluster.GenerationRequest;
import dev.troupe.protocol.cluster.GenerationRequest.Resume;
import dev.troupe.protocol.cluster.GenerationRequest.ResumedChoice;
import dev.troupe.protocol.cluster.SamplingParams;
import dev.troupe.scheduler.SchedulingPolicy;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Resuming a request on another replica (migration): a replica that gets the prompt plus the tokens
 * the first one delivered continues exactly where it stopped. For every cut point, what the first
 * replica sent before the cut followed by what the resumed replica sends equals the uninterrupted
 * run: the same token ids, text, finishes, logprobs and usage, for greedy and seeded sampling (with
 * penalties and min_tokens), n > 1 with choices ending at different steps, and stop strings held
 * back across the cut.
 */
class EngineResumeTest {

  private static List<RequestUpdate> run(GenerationRequest r) {
    try (Driver d = new Driver(TestEngines.demo(EngineSettings.small(), SchedulingPolicy.FCFS))) {
      assertNull(d.add(r));
      List<RequestUpdate> updates = d.drain().of(r.requestId());
      assertTrue(d.failures.isEmpty(), d.failures.toString());
      assertEquals(0, d.engine.core().scheduler().blocks().numUsed());
      return updates;
    }
  }

  /** What the client had received after the first {@code cut} updates. */
  private static Resume delivered(List<RequestUpdate> updates, int cut, int n) {
    List<List<Integer>> ids = new ArrayList<>();
    boolean[] finished = new boolean[n];
    for (int i = 0; i < n; i++) ids.add(new ArrayList<>());
    for (RequestUpdate u : updates.subList(0, cut))
      for (ChoiceUpdate c : u.choices()) {
        for (int t : c.tokenIds()) ids.get(c.index()).add(t);
        if (c.finishReason() != null) finished[c.index()] = true;
      }
    List<ResumedChoice> choices = new ArrayList<>();
    for (int i = 0; i < n; i++) choices.add(new ResumedChoice(ids.get(i), finished[i]));
    return new Resume(choices);
  }

  /**
   * Cuts the uninterrupted run after every update but the last, resumes on a fresh engine, and
   * checks that the two halves together equal the whole.
   */
  private static void resumesExactlyAtEveryCut(GenerationRequest request) {
    int n = request.sampling().n();
    List<RequestUpdate> whole = run(request);
    assertTrue(whole.size() >= 3, "long enough to cut: " + whole.size());
    for (int cut = 1; cut < whole.size(); cut++) {
      List<RequestUpdate> before = whole.subList(0, cut);
      GenerationRequest resumed =
          request.toBuilder().requestId("resumed-" + cut).resume(delivered(whole, cut, n)).build();
      List<RequestUpdate> after = run(resumed);
      assertNotNull(after.get(0).started(), "the resumed replica reports who serves it");
      assertNull(after.get(0).started().promptLogprobs(), "prompt logprobs were delivered");
      List<RequestUpdate> joined = new ArrayList<>(before);
      joined.addAll(after);
      String at = "cut after update " + cut;
      for (int i = 0; i < n; i++) {
        assertEquals(tokens(whole, i), tokens(joined, i), at + ", choice " + i + " tokens");
        assertEquals(text(whole, i), text(joined, i), at + ", choice " + i + " text");
        ChoiceUpdate expected = finish(whole, i);
        ChoiceUpdate actual = finish(joined, i);
        assertEquals(expected.finishReason(), actual.finishReason(), at);
        assertEquals(expected.stopReason(), actual.stopReason(), at);
        assertLogprobs(logprobs(whole, i), logprobs(joined, i), at);
      }
      assertEquals(usage(whole), usage(after), at + ": usage counts the delivered tokens");
    }
  }

  private static List<LogprobsText> logprobs(List<RequestUpdate> updates, int choice) {
    List<LogprobsText> out = new ArrayList<>();
    for (ChoiceUpdate c : Driver.choices(updates, choice))
      if (c.logprobs() != null) out.addAll(c.logprobs());
    return out;
  }

  private static void assertLogprobs(List<LogprobsText> want, List<LogprobsText> got, String at) {
    assertEquals(want.size(), got.size(), at + ": logprob entries");
    for (int i = 0; i < want.size(); i++) {
      LogprobsText w = want.get(i), g = got.get(i);
      assertEquals(w.chosen().tokenId(), g.chosen().tokenId(), at);
      assertEquals(w.chosen().token(), g.chosen().token(), at);
      // A prefill of prompt + tokens and a decode step sum in another order: equal to rounding.
      assertEquals(w.chosen().logprob(), g.chosen().logprob(), 1e-4, at);
      assertEquals(w.top().size(), g.top().size(), at);
      for (int k = 0; k < w.top().size(); k++)
        assertEquals(w.top().get(k).tokenId(), g.top().get(k).tokenId(), at + ", top " + k);
    }
  }

  @Test
  void greedyWithLogprobsContinuesExactly() {
    SamplingParams p =
        SamplingParams.builder()
            .temperature(0.0)
            .maxTokens(10)
            .ignoreEos(true)
            .logprobs(3)
            .repetitionPenalty(1.3)
            .build();
    resumesExactlyAtEveryCut(
        GenerationRequest.prompt("greedy", "The quick brown fox", p).toBuilder()
            .returnTokenIds(true)
            .build());
  }

  @Test
  void seededChoicesWithPenaltiesAndMinTokensContinueExactly() {
    SamplingParams p =
        SamplingParams.builder()
            .n(3)
            .temperature(1.1)
            .topP(0.9)
            .topK(40)
            .seed(4242L)
            .maxTokens(9)
            .minTokens(4)
            .frequencyPenalty(0.7)
            .presencePenalty(0.3)
            .logprobs(2)
            .build();
    resumesExactlyAtEveryCut(GenerationRequest.prompt("seeded", "Once upon a time", p));
  }

  @Test
  void choicesThatEndedBeforeTheCutStayEnded() {
    // A stop token that choice 1 samples early (and the others do not) ends it before the rest.
    SamplingParams.Builder free =
        SamplingParams.builder().n(3).temperature(1.0).seed(77L).maxTokens(10).ignoreEos(true);
    List<RequestUpdate> unstopped = run(GenerationRequest.prompt("free", "A story", free.build()));
    List<Integer> c1 = tokens(unstopped, 1);
    Integer stopId = null;
    for (int j = 1; j < 6 && stopId == null; j++) {
      int t = c1.get(j);
      boolean elsewhere = false;
      for (int i : new int[] {0, 2})
        elsewhere |= tokens(unstopped, i).contains(t) || c1.subList(0, j).contains(t);
      if (!elsewhere) stopId = t;
    }
    assertNotNull(stopId, "choice 1 has a token of its own early on: " + c1);
    GenerationRequest stopped =
        GenerationRequest.prompt("stopped", "A story", free.stopTokenIds(List.of(stopId)).build());
    List<RequestUpdate> whole = run(stopped);
    assertTrue(tokens(whole, 1).size() < tokens(whole, 0).size(), "choice 1 ends first");
    resumesExactlyAtEveryCut(stopped);
  }

  @Test
  void aStopStringHeldBackAcrossTheCutEndsTheChoiceAsWithoutTheCut() {
    SamplingParams sampled =
        SamplingParams.builder().temperature(1.0).seed(5L).maxTokens(14).ignoreEos(true).build();
    List<RequestUpdate> plain = run(GenerationRequest.prompt("plain", "Hello there", sampled));
    // A stop string from the middle of one token's text to the middle of a later one's, so the
    // replica holds its start back for a step or more before it matches.
    List<String> pieces = new ArrayList<>();
    for (RequestUpdate u : plain) pieces.add(u.choices().get(0).text());
    String all = String.join("", pieces);
    String stop = null;
    int offset = 0;
    for (int k = 0; k < pieces.size() - 2 && stop == null; k++) {
      String a = pieces.get(k), b = pieces.get(k + 1) + pieces.get(k + 2);
      int start = offset + a.length() / 2;
      offset += a.length();
      if (k < 3 || a.length() < 2 || b.length() < 2) continue;
      String candidate = a.substring(a.length() / 2) + b.substring(0, b.length() / 2);
      if (all.indexOf(candidate) == start) stop = candidate; // its first occurrence
    }
    assertNotNull(stop, "texts long enough: " + pieces);
    SamplingParams withStop = sampled.toBuilder().stop(List.of(stop)).build();
    GenerationRequest request = GenerationRequest.prompt("stop", "Hello there", withStop);
    List<RequestUpdate> whole = run(request);
    assertEquals(stop, finish(whole, 0).stopReason(), "the stop string ends it");
    boolean heldBack = false;
    for (RequestUpdate u : whole)
      heldBack |= u.choices().get(0).text().isEmpty() && u.choices().get(0).tokenIds().length > 0;
    assertTrue(heldBack, "some step's text was held back for the stop string");
    resumesExactlyAtEveryCut(request);
  }

  @Test
  void aResumeTheReplicaCannotContinueIsRefusedNotChanged() {
    SamplingParams p = SamplingParams.builder().temperature(0.0).maxTokens(4).build();
    GenerationRequest base = GenerationRequest.prompt("bad", "Hello", p);
    try (Driver d = new Driver(TestEngines.demo(EngineSettings.small(), SchedulingPolicy.FCFS))) {
      Set<String> messages = new HashSet<>();
      for (Resume wrong :
          List.of(
              new Resume(List.of(new ResumedChoice(List.of(1, 2, 3, 4), false))), // budget spent
              new Resume(List.of(new ResumedChoice(List.of(-1), false))), // not a token
              new Resume(
                  List.of(
                      new ResumedChoice(List.of(1), false),
                      new ResumedChoice(List.of(1), false))))) { // n is 1
        Rejection r = d.add(base.withResume(wrong));
        assertNotNull(r, wrong.toString());
        assertEquals(Rejection.Kind.INTERNAL, r.kind());
        messages.add(r.getMessage());
      }
      assertEquals(3, messages.size(), messages.toString());
      assertTrue(messages.iterator().next().contains("cannot be resumed"), messages.toString());
      assertEquals(0, d.engine.core().scheduler().numWaiting(), "nothing was queued");
    }
  }
}
