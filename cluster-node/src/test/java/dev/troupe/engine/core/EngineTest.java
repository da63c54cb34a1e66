package dev.troupe.engine.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.engine.ModelRunner;
import dev.troupe.engine.runner.ModelRunners;
import dev.troupe.engine.tokenizer.TokenizerBundle;
import dev.troupe.protocol.cluster.GenerationRequest;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.*;
import dev.troupe.protocol.cluster.SamplingParams;
import dev.troupe.scheduler.SchedulingPolicy;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The engine on the built-in demo model (random weights): generations are checked against a
 * reference that recomputes the whole sequence from scratch at every token, so KV-cache paging,
 * chunked prefill, forking, preemption and batching must not change a single token.
 */
class EngineTest {
  static final TokenizerBundle TEXT = TestEngines.TEXT;
  private static ModelRunner reference;

  @BeforeAll
  static void openReference() {
    reference = ModelRunners.openDemo(16, 16);
  }

  @AfterAll
  static void closeReference() {
    reference.close();
  }

  static Engine engine(EngineSettings settings, SchedulingPolicy policy) {
    return TestEngines.demo(settings, policy);
  }

  static SamplingParams greedy(int maxTokens) {
    return SamplingParams.builder().temperature(0.0).maxTokens(maxTokens).ignoreEos(true).build();
  }

  static SamplingParams seeded(int n, long seed, int maxTokens) {
    return SamplingParams.builder()
        .n(n)
        .temperature(0.9)
        .topP(0.95)
        .topK(50)
        .seed(seed)
        .maxTokens(maxTokens)
        .ignoreEos(true)
        .build();
  }

  static GenerationRequest prompt(String id, String text, SamplingParams p) {
    return GenerationRequest.prompt(id, text, p);
  }

  static void collect(List<GenerationEvent> step, Map<String, List<GenerationEvent>> into) {
    for (GenerationEvent ev : step)
      into.computeIfAbsent(ev.requestId(), k -> new ArrayList<>()).add(ev);
  }

  /** Steps until idle; events grouped by request id. */
  static Map<String, List<GenerationEvent>> drain(
      Engine e, Map<String, List<GenerationEvent>> into) {
    int guard = 0;
    while (e.hasWork() && guard++ < 10_000) collect(e.step(), into);
    return into;
  }

  static List<Integer> tokens(List<GenerationEvent> events, int choice) {
    List<Integer> out = new ArrayList<>();
    for (GenerationEvent ev : events)
      if (ev instanceof TokenDelta d)
        for (ChoiceDelta c : d.choices()) if (c.index() == choice) out.addAll(c.tokenIds());
    return out;
  }

  static String text(List<GenerationEvent> events, int choice) {
    StringBuilder sb = new StringBuilder();
    for (GenerationEvent ev : events)
      if (ev instanceof TokenDelta d)
        for (ChoiceDelta c : d.choices()) if (c.index() == choice) sb.append(c.text());
    return sb.toString();
  }

  /** Greedy decoding by full recomputation: no cache reuse between tokens. */
  static List<Integer> referenceGreedy(int[] prompt, int maxTokens) {
    List<Integer> seq = new ArrayList<>();
    for (int t : prompt) seq.add(t);
    List<Integer> out = new ArrayList<>();
    for (int step = 0; step < maxTokens; step++) {
      int[] tokens = seq.stream().mapToInt(Integer::intValue).toArray();
      int[] table = new int[(tokens.length + 15) / 16];
      for (int b = 0; b < table.length; b++) table[b] = b;
      float[] logits =
          reference.forward(List.of(new ModelRunner.SequenceChunk(tokens, 0, table, false)))
              .get(0)[0];
      int best = 0;
      for (int i = 1; i < logits.length; i++) if (logits[i] > logits[best]) best = i;
      out.add(best);
      seq.add(best);
    }
    return out;
  }

  static int[] encode(String text) {
    return TEXT.tokenizer().encode(text, false);
  }

  @Test
  void greedyGenerationMatchesFullRecomputation() {
    try (Engine e = engine(EngineSettings.small(), SchedulingPolicy.FCFS)) {
      assertEquals(List.of(), e.add(prompt("a", "The quick brown fox", greedy(12))));
      List<GenerationEvent> events = drain(e, new LinkedHashMap<>()).get("a");
      Started started = assertInstanceOf(Started.class, events.get(0));
      int[] ids = encode("The quick brown fox");
      assertEquals(ids.length, started.promptTokenIds().size());
      List<Integer> expected = referenceGreedy(ids, 12);
      assertEquals(expected, tokens(events, 0));
      int[] out = expected.stream().mapToInt(Integer::intValue).toArray();
      assertEquals(TEXT.tokenizer().decode(out, true, true), text(events, 0));
      ChoiceFinished fin = assertInstanceOf(ChoiceFinished.class, events.get(events.size() - 2));
      assertEquals(FinishReason.LENGTH, fin.finishReason());
      Completed done = assertInstanceOf(Completed.class, events.get(events.size() - 1));
      assertEquals(new Usage(ids.length, 12, 0), done.usage());
      assertEquals(0, e.scheduler().blocks().numUsed(), "blocks freed at the end");
    }
  }

  @Test
  void aRequestJoiningMidwayAndChunkedPrefillChangeNothing() {
    // Budget 8: the long prompt of b is prefilled in chunks while a decodes.
    EngineSettings settings = new EngineSettings(16, 64, 0, 8, 8, 16, true, 0, true, List.of());
    String longText = "one two three four five six seven eight nine ten ".repeat(4);
    try (Engine e = engine(settings, SchedulingPolicy.FCFS)) {
      Map<String, List<GenerationEvent>> events = new LinkedHashMap<>();
      e.add(prompt("a", "Hello there", greedy(10)));
      for (int i = 0; i < 3; i++) collect(e.step(), events);
      e.add(prompt("b", longText, greedy(6)));
      drain(e, events);
      assertEquals(referenceGreedy(encode("Hello there"), 10), tokens(events.get("a"), 0));
      assertEquals(referenceGreedy(encode(longText), 6), tokens(events.get("b"), 0));
    }
  }

  @Test
  void nChoicesShareOnePrefillAndEachMatchesItsOwnSeed() {
    try (Engine e = engine(EngineSettings.small(), SchedulingPolicy.FCFS)) {
      e.add(prompt("n3", "Once upon a time", seeded(3, 1234, 8)));
      Map<String, List<GenerationEvent>> events = drain(e, new LinkedHashMap<>());
      List<GenerationEvent> n3 = events.get("n3");
      assertEquals(1, n3.stream().filter(ev -> ev instanceof Started).count());
      Completed done = assertInstanceOf(Completed.class, n3.get(n3.size() - 1));
      assertEquals(24, done.usage().completionTokens());
      // Choice i uses seed + i: a lone request seeded 1234 + i gives the same tokens.
      for (int i = 0; i < 3; i++)
        e.add(prompt("solo" + i, "Once upon a time", seeded(1, 1234 + i, 8)));
      drain(e, events);
      for (int i = 0; i < 3; i++) assertEquals(tokens(events.get("solo" + i), 0), tokens(n3, i));
      assertNotEquals(tokens(n3, 0), tokens(n3, 1), "different seeds, different samples");
    }
  }

  @Test
  void aSeededRequestSamplesTheSameTokensAloneAndInAMixedBatch() {
    try (Engine e = engine(EngineSettings.small(), SchedulingPolicy.FCFS)) {
      e.add(prompt("alone", "Seeded sampling", seeded(1, 99, 10)));
      Map<String, List<GenerationEvent>> events = drain(e, new LinkedHashMap<>());
      // Again beside other work: a seeded n=2 request already decoding, a long prompt prefilling.
      e.add(prompt("other", "Some other request that runs first", seeded(2, 5, 12)));
      collect(e.step(), events);
      collect(e.step(), events);
      e.add(prompt("mixed", "Seeded sampling", seeded(1, 99, 10)));
      e.add(prompt("long", "word ".repeat(60), greedy(5)));
      drain(e, events);
      assertEquals(10, tokens(events.get("alone"), 0).size());
      assertEquals(tokens(events.get("alone"), 0), tokens(events.get("mixed"), 0));
    }
  }

  @Test
  void preemptionRecomputesWithoutChangingOutput() {
    // 6 blocks of 4 = 24 positions for three requests that each grow to ~14 tokens.
    EngineSettings tiny = new EngineSettings(4, 6, 0, 8, 64, 16, true, 0, true, List.of());
    try (Engine e = engine(tiny, SchedulingPolicy.FCFS)) {
      String[] texts = {"alpha beta gamma", "delta epsilon zeta", "eta theta iota"};
      for (int i = 0; i < 3; i++) e.add(prompt("r" + i, texts[i], greedy(10)));
      Map<String, List<GenerationEvent>> events = drain(e, new LinkedHashMap<>());
      assertTrue(e.scheduler().numPreemptions() > 0, "the cache is too small for all three");
      for (int i = 0; i < 3; i++)
        assertEquals(referenceGreedy(encode(texts[i]), 10), tokens(events.get("r" + i), 0));
      assertEquals(0, e.scheduler().blocks().numUsed());
    }
  }

  @Test
  void cancelFreesBlocksAndAbortsChoices() {
    try (Engine e = engine(EngineSettings.small(), SchedulingPolicy.FCFS)) {
      e.add(prompt("c", "Tell me a story", seeded(2, 7, 50)));
      e.step();
      e.step();
      assertTrue(e.scheduler().blocks().numUsed() > 0);
      List<GenerationEvent> events = e.cancel("c");
      assertEquals(0, e.scheduler().blocks().numUsed());
      assertEquals(
          2,
          events.stream()
              .filter(
                  ev -> ev instanceof ChoiceFinished f && f.finishReason() == FinishReason.ABORT)
              .count());
      assertInstanceOf(Completed.class, events.get(events.size() - 1));
      assertTrue(e.cancel("c").isEmpty(), "unknown ids are ignored");
      assertFalse(e.hasWork());
    }
  }

  @Test
  void aFullWaitingQueueIsOverload() {
    try (Engine e = engine(EngineSettings.small().withMaxWaiting(1), SchedulingPolicy.FCFS)) {
      assertEquals(List.of(), e.add(prompt("a", "hi", greedy(2))));
      Failed f = assertInstanceOf(Failed.class, e.add(prompt("b", "hi", greedy(2))).get(0));
      assertEquals(ErrorKind.OVERLOADED, f.kind());
      e.step(); // a leaves the queue
      assertEquals(List.of(), e.add(prompt("b", "hi", greedy(2))));
    }
  }

  @Test
  void invalidRequestsAreRefusedWithTheParameter() {
    EngineSettings settings = new EngineSettings(16, 64, 32, 8, 256, 16, true, 0, true, List.of());
    try (Engine e = engine(settings, SchedulingPolicy.FCFS)) {
      assertEquals(32, e.maxModelLen());
      Failed longPrompt = (Failed) e.add(prompt("a", "word ".repeat(40), greedy(2))).get(0);
      assertEquals("messages", longPrompt.param());
      assertTrue(longPrompt.message().contains("maximum context length is 32 tokens"));
      Failed tooMany = (Failed) e.add(prompt("b", "hello", greedy(32))).get(0);
      assertEquals("max_tokens", tooMany.param());
      Failed priority = (Failed) e.add(prompt("c", "hello", greedy(2)).withPriority(3)).get(0);
      assertEquals("priority", priority.param());
      // Unset max_tokens runs to the context: 32 - prompt.
      e.add(prompt("e", "hello", greedy(SamplingParams.MAX_TOKENS_UNSET)));
      List<GenerationEvent> events = drain(e, new LinkedHashMap<>()).get("e");
      Completed done = (Completed) events.get(events.size() - 1);
      assertEquals(32 - encode("hello").length, done.usage().completionTokens());
    }
  }

  @Test
  void theModelsGenerationConfigIsAppliedToUnsetFields() {
    // A model whose generation config is greedy: an unset temperature takes it, so n = 2 is
    // refused as vLLM refuses it; the same request with its own temperature runs.
    var greedyModel =
        new dev.troupe.protocol.cluster.SamplingDefaults(0.0, null, null, null, null, null, null);
    SamplingParams unset =
        SamplingParams.builder()
            .n(2)
            .temperature(null)
            .topP(null)
            .topK(null)
            .minP(null)
            .presencePenalty(null)
            .frequencyPenalty(null)
            .repetitionPenalty(null)
            .maxTokens(3)
            .build();
    try (Engine e = TestEngines.demo(EngineSettings.small(), SchedulingPolicy.FCFS, greedyModel)) {
      Failed f = (Failed) e.add(prompt("a", "hello", unset)).get(0);
      assertEquals("n", f.param());
      assertEquals(
          List.of(),
          e.add(prompt("b", "hello", unset.toBuilder().temperature(0.8).build())),
          "the request's own temperature wins");
      Map<String, List<GenerationEvent>> events = drain(e, new LinkedHashMap<>());
      assertEquals(
          6,
          ((Completed) events.get("b").get(events.get("b").size() - 1)).usage().completionTokens());
    }
  }

  @Test
  void rulesThatNeedTheModelAreTheEnginesAlone() {
    EngineSettings settings = new EngineSettings(16, 64, 32, 8, 256, 16, true, 0, true, List.of());
    try (Engine e = engine(settings, SchedulingPolicy.FCFS)) {
      Failed truncate =
          (Failed)
              e.add(prompt("t", "hello", greedy(2)).toBuilder().truncatePromptTokens(33).build())
                  .get(0);
      assertEquals("truncate_prompt_tokens", truncate.param());
      assertTrue(
          truncate.message().contains("greater than max_model_len (32)"), truncate.message());
      Failed priority = (Failed) e.add(prompt("p", "hello", greedy(2)).withPriority(1)).get(0);
      assertTrue(
          priority.message().contains("does not use priority scheduling"), priority.message());
    }
  }

  @Test
  void promptLogprobsStartWithNullAndMatchTheReference() {
    SamplingParams p = greedy(1).toBuilder().logprobs(2).promptLogprobs(3).build();
    try (Engine e = engine(EngineSettings.small(), SchedulingPolicy.FCFS)) {
      e.add(prompt("p", "Logprobs of a prompt", p));
      List<GenerationEvent> events = drain(e, new LinkedHashMap<>()).get("p");
      Started s = (Started) events.get(0);
      int[] ids = encode("Logprobs of a prompt");
      assertEquals(ids.length, s.promptLogprobs().size());
      assertNull(s.promptLogprobs().get(0));
      // Position 1 is predicted by the logits after token 0.
      float[] row =
          reference.forward(
                  List.of(
                      new ModelRunner.SequenceChunk(new int[] {ids[0]}, 0, new int[] {0}, false)))
              .get(0)[0];
      double max = Double.NEGATIVE_INFINITY, sum = 0;
      for (float v : row) max = Math.max(max, v);
      for (float v : row) sum += Math.exp(v - max);
      double expected = row[ids[1]] - max - Math.log(sum);
      LogprobEntry first = s.promptLogprobs().get(1);
      assertEquals(ids[1], first.chosen().tokenId());
      assertEquals(expected, first.chosen().logprob(), 1e-4);
      TokenDelta d = (TokenDelta) events.get(1);
      LogprobEntry sampled = d.choices().get(0).logprobs().get(0);
      assertEquals(1, sampled.chosen().rank(), "greedy picks the top token");
      assertEquals(2, sampled.top().size());
    }
  }

  @Test
  void chatMessagesAreRenderedWithTheModelsTemplate() {
    try (Engine e = engine(EngineSettings.small(), SchedulingPolicy.FCFS)) {
      List<Map<String, Object>> messages =
          List.of(
              Map.of("role", "system", "content", "Be brief."),
              Map.of("role", "user", "content", "Hi"));
      e.add(GenerationRequest.chat("chat", messages, greedy(3)));
      List<GenerationEvent> events = drain(e, new LinkedHashMap<>()).get("chat");
      Started s = (Started) events.get(0);
      int[] ids = s.promptTokenIds().stream().mapToInt(Integer::intValue).toArray();
      String prompt = TEXT.tokenizer().decode(ids, false, true);
      assertTrue(
          prompt.startsWith(
              "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"),
          prompt);
      // A request template replaces the model's.
      Tokenized t =
          (Tokenized)
              e.tokenize(
                  messages,
                  null,
                  null,
                  true,
                  false,
                  false,
                  "{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}",
                  Map.of(),
                  false);
      assertEquals(
          "[system]Be brief.[user]Hi",
          TEXT.tokenizer()
              .decode(t.tokens().stream().mapToInt(Integer::intValue).toArray(), false, true));
      Rejected bad =
          (Rejected)
              e.tokenize(messages, null, null, true, false, false, "{% for %}", Map.of(), false);
      assertEquals("chat_template", bad.param());
    }
  }

  /** Logits after the whole sequence, recomputed from scratch. */
  static float[] referenceRow(List<Integer> seq) {
    int[] tokens = seq.stream().mapToInt(Integer::intValue).toArray();
    int[] table = new int[(tokens.length + 15) / 16];
    for (int b = 0; b < table.length; b++) table[b] = b;
    return reference.forward(List.of(new ModelRunner.SequenceChunk(tokens, 0, table, false)))
        .get(0)[0];
  }

  @Test
  void beamSearchForksSequencesAndMatchesASearchOnRecomputedLogits() {
    SamplingParams p = greedy(5).toBuilder().n(3).useBeamSearch(true).build();
    String text = "Beam search over a prompt";
    // Blocks of 4: beams share and copy partial blocks as they branch.
    EngineSettings settings = new EngineSettings(4, 64, 0, 8, 256, 16, true, 0, true, List.of());
    try (Engine e = engine(settings, SchedulingPolicy.FCFS)) {
      e.add(prompt("beam", text, p));
      List<GenerationEvent> events = drain(e, new LinkedHashMap<>()).get("beam");
      assertEquals(0, e.scheduler().blocks().numUsed());
      // The same search driven with logits recomputed from scratch for every beam.
      int[] ids = encode(text);
      var search =
          new dev.troupe.engine.sampling.BeamSearch(3, 5, ids.length, -1, true, 1.0, false);
      while (!search.done()) {
        List<float[]> rows = new ArrayList<>();
        for (var beam : search.live()) {
          List<Integer> seq = new ArrayList<>();
          for (int t : ids) seq.add(t);
          for (int t : beam.tokens()) seq.add(t);
          rows.add(referenceRow(seq));
        }
        search.step(rows);
      }
      var results = search.results();
      assertEquals(3, results.size());
      for (int i = 0; i < 3; i++) {
        List<Integer> expected = new ArrayList<>();
        for (int t : results.get(i).tokens()) expected.add(t);
        assertEquals(expected, tokens(events, i), "beam " + i);
      }
      Completed done = (Completed) events.get(events.size() - 1);
      assertEquals(15, done.usage().completionTokens());
    }
  }

  @Test
  void thePriorityPolicyRunsLowerValuesFirst() {
    EngineSettings oneAtATime = EngineSettings.small().withMaxNumSeqs(1);
    try (Engine e = engine(oneAtATime, SchedulingPolicy.PRIORITY)) {
      e.add(prompt("background", "hello", greedy(2)).withPriority(5));
      e.add(prompt("interactive", "hello", greedy(2)).withPriority(-1));
      List<String> startOrder = new ArrayList<>();
      while (e.hasWork())
        for (GenerationEvent ev : e.step())
          if (ev instanceof Started) startOrder.add(ev.requestId());
      assertEquals(List.of("interactive", "background"), startOrder);
    }
  }

  @Test
  void tokenizeAndDetokenize() {
    try (Engine e = engine(EngineSettings.small(), SchedulingPolicy.FCFS)) {
      Tokenized t =
          (Tokenized)
              e.tokenize(null, "Hello world", null, false, false, true, null, Map.of(), true);
      assertEquals(encode("Hello world").length, t.count());
      assertEquals(t.count(), t.tokenStrs().size());
      Detokenized d = (Detokenized) e.detokenize(t.tokens());
      assertEquals("Hello world", d.prompt());
      assertInstanceOf(Rejected.class, e.detokenize(List.of(-5)));
    }
  }
}
