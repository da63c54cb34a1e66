package dev.troupe.engine.serving;

import static dev.troupe.engine.serving.Driver.finish;
import static dev.troupe.engine.serving.Driver.started;
import static dev.troupe.engine.serving.Driver.text;
import static dev.troupe.engine.serving.Driver.tokens;
import static dev.troupe.engine.serving.Driver.usage;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.engine.ModelRunner;
import dev.troupe.engine.core.EngineSettings;
import dev.troupe.engine.core.Rejection;
import dev.troupe.engine.input.InputProcessor;
import dev.troupe.engine.output.RequestUpdate;
import dev.troupe.engine.output.RequestUpdate.LogprobsText;
import dev.troupe.engine.runner.ModelRunners;
import dev.troupe.engine.sampling.FinishReason;
import dev.troupe.engine.tokenizer.TokenizerBundle;
import dev.troupe.protocol.cluster.GenerationRequest;
import dev.troupe.protocol.cluster.SamplingDefaults;
import dev.troupe.protocol.cluster.SamplingParams;
import dev.troupe.scheduler.SchedulingPolicy;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The engine (input processor, core, output processor) on the built-in demo model (random weights):
 * generations are checked against a reference that recomputes the whole sequence from scratch at
 * every token, so KV-cache paging, chunked prefill, forking, preemption and batching must not
 * change a single token.
 */
class EngineTest {
  static final TokenizerBundle TEXT = TestEngines.TEXT;
  private static ModelRunner reference;

  @BeforeAll
  static void openReference() {
    reference = ModelRunners.openDemo(32, 16); // 512 positions: the long-prompt test
  }

  @AfterAll
  static void closeReference() {
    reference.close();
  }

  static Driver engine(EngineSettings settings, SchedulingPolicy policy) {
    return new Driver(TestEngines.demo(settings, policy));
  }

  static SamplingParams greedy(Integer maxTokens) {
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

  /** Greedy decoding by full recomputation: no cache reuse between tokens. */
  static List<Integer> referenceGreedy(int[] prompt, int maxTokens) {
    List<Integer> seq = new ArrayList<>();
    for (int t : prompt) seq.add(t);
    List<Integer> out = new ArrayList<>();
    for (int step = 0; step < maxTokens; step++) {
      float[] logits = referenceRow(seq, prompt.length);
      int best = 0;
      for (int i = 1; i < logits.length; i++) if (logits[i] > logits[best]) best = i;
      out.add(best);
      seq.add(best);
    }
    return out;
  }

  /**
   * Logits after the whole sequence, recomputed from scratch as a moved request's is: its first
   * {@code promptLength} tokens as prompt rows (BF16 products on oneDNN where the runner has it),
   * the rest as generated rows (the FP32 path its decode steps took).
   */
  static float[] referenceRow(List<Integer> seq, int promptLength) {
    int[] tokens = seq.stream().mapToInt(Integer::intValue).toArray();
    int[] table = new int[(tokens.length + 15) / 16];
    for (int b = 0; b < table.length; b++) table[b] = b;
    var chunk = new ModelRunner.SequenceChunk(tokens, 0, table, false, 0, promptLength);
    return reference.forward(List.of(chunk)).get(0)[0];
  }

  static int[] encode(String text) {
    return TEXT.tokenizer().encode(text, false);
  }

  @Test
  void greedyGenerationMatchesFullRecomputation() {
    try (Driver e = engine(EngineSettings.small(), SchedulingPolicy.FCFS)) {
      assertNull(
          e.add(
              prompt("a", "The quick brown fox", greedy(12)).toBuilder()
                  .returnTokenIds(true)
                  .build()));
      List<RequestUpdate> updates = e.drain().of("a");
      int[] ids = encode("The quick brown fox");
      assertEquals(ids.length, started(updates).promptTokens());
      assertEquals(ids.length, started(updates).promptTokenIds().length, "asked for");
      List<Integer> expected = referenceGreedy(ids, 12);
      assertEquals(expected, tokens(updates, 0));
      assertEquals(12, updates.size(), "one update per step: prefill + 11 decodes");
      int[] out = expected.stream().mapToInt(Integer::intValue).toArray();
      assertEquals(TEXT.tokenizer().decode(out, true, true), text(updates, 0));
      assertEquals(FinishReason.LENGTH, finish(updates, 0).finishReason());
      assertEquals(new RequestUpdate.Usage(ids.length, 12, 0), usage(updates));
      for (int i = 0; i < updates.size() - 1; i++) assertNull(updates.get(i).usage());
      assertEquals(0, e.engine.core().scheduler().blocks().numUsed(), "blocks freed at the end");
    }
  }

  @Test
  void promptIdsTravelOnlyWhenAskedFor() {
    try (Driver e = engine(EngineSettings.small(), SchedulingPolicy.FCFS)) {
      e.add(prompt("a", "Hello there", greedy(2)));
      RequestUpdate.Started s = started(e.drain().of("a"));
      assertNull(s.promptTokenIds());
      assertEquals(encode("Hello there").length, s.promptTokens());
    }
  }

  @Test
  void aRequestJoiningMidwayAndChunkedPrefillChangeNothing() {
    // Budget 8: the long prompt of b is prefilled in chunks while a decodes.
    EngineSettings settings = new EngineSettings(16, 64, 0, 8, 8, 16, true, 0, true, List.of());
    String longText = "one two three four five six seven eight nine ten ".repeat(4);
    try (Driver e = engine(settings, SchedulingPolicy.FCFS)) {
      e.add(prompt("a", "Hello there", greedy(10)));
      for (int i = 0; i < 3; i++) e.step();
      e.add(prompt("b", longText, greedy(6)));
      e.drain();
      assertEquals(referenceGreedy(encode("Hello there"), 10), tokens(e.of("a"), 0));
      assertEquals(referenceGreedy(encode(longText), 6), tokens(e.of("b"), 0));
    }
  }

  @Test
  void nChoicesShareOnePrefillAndEachMatchesItsOwnSeed() {
    try (Driver e = engine(EngineSettings.small(), SchedulingPolicy.FCFS)) {
      e.add(prompt("n3", "Once upon a time", seeded(3, 1234, 8)));
      List<RequestUpdate> n3 = e.drain().of("n3");
      assertEquals(1, n3.stream().filter(u -> u.started() != null).count());
      assertEquals(8, n3.size(), "one update per step carries all three choices");
      assertEquals(3, n3.get(0).choices().size());
      assertEquals(24, usage(n3).completionTokens());
      // Choice i uses seed + i: a lone request seeded 1234 + i gives the same tokens.
      for (int i = 0; i < 3; i++)
        e.add(prompt("solo" + i, "Once upon a time", seeded(1, 1234 + i, 8)));
      e.drain();
      for (int i = 0; i < 3; i++) assertEquals(tokens(e.of("solo" + i), 0), tokens(n3, i));
      assertNotEquals(tokens(n3, 0), tokens(n3, 1), "different seeds, different samples");
    }
  }

  @Test
  void aSeededRequestSamplesTheSameTokensAloneAndInAMixedBatch() {
    try (Driver e = engine(EngineSettings.small(), SchedulingPolicy.FCFS)) {
      e.add(prompt("alone", "Seeded sampling", seeded(1, 99, 10)));
      e.drain();
      // Again beside other work: a seeded n=2 request already decoding, a long prompt prefilling.
      e.add(prompt("other", "Some other request that runs first", seeded(2, 5, 12)));
      e.step();
      e.step();
      e.add(prompt("mixed", "Seeded sampling", seeded(1, 99, 10)));
      e.add(prompt("long", "word ".repeat(60), greedy(5)));
      e.drain();
      assertEquals(10, tokens(e.of("alone"), 0).size());
      assertEquals(tokens(e.of("alone"), 0), tokens(e.of("mixed"), 0));
    }
  }

  @Test
  void preemptionRecomputesWithoutChangingOutput() {
    // 6 blocks of 4 = 24 positions for three requests that each grow to ~14 tokens.
    EngineSettings tiny = new EngineSettings(4, 6, 0, 8, 64, 16, true, 0, true, List.of());
    try (Driver e = engine(tiny, SchedulingPolicy.FCFS)) {
      String[] texts = {"alpha beta gamma", "delta epsilon zeta", "eta theta iota"};
      for (int i = 0; i < 3; i++) e.add(prompt("r" + i, texts[i], greedy(10)));
      e.drain();
      var scheduler = e.engine.core().scheduler();
      assertTrue(scheduler.numPreemptions() > 0, "the cache is too small for all three");
      for (int i = 0; i < 3; i++)
        assertEquals(referenceGreedy(encode(texts[i]), 10), tokens(e.of("r" + i), 0));
      assertEquals(0, scheduler.blocks().numUsed());
    }
  }

  @Test
  void cancelFreesBlocksAndAbortsChoices() {
    try (Driver e = engine(EngineSettings.small(), SchedulingPolicy.FCFS)) {
      e.add(prompt("c", "Tell me a story", seeded(2, 7, 50)));
      e.step();
      e.step();
      assertTrue(e.engine.core().scheduler().blocks().numUsed() > 0);
      RequestUpdate last = e.abort("c");
      assertEquals(0, e.engine.core().scheduler().blocks().numUsed());
      assertEquals(
          2, last.choices().stream().filter(c -> c.finishReason() == FinishReason.ABORT).count());
      assertNotNull(last.usage());
      assertNull(e.abort("c"), "unknown ids are ignored");
      assertFalse(e.engine.hasWork());
    }
  }

  @Test
  void aFullWaitingQueueIsOverload() {
    try (Driver e = engine(EngineSettings.small().withMaxWaiting(1), SchedulingPolicy.FCFS)) {
      assertNull(e.add(prompt("a", "hi", greedy(2))));
      Rejection r = e.add(prompt("b", "hi", greedy(2)));
      assertEquals(Rejection.Kind.OVERLOADED, r.kind());
      e.step(); // a leaves the queue
      assertNull(e.add(prompt("b", "hi", greedy(2))));
    }
  }

  @Test
  void invalidRequestsAreRefusedWithTheParameter() {
    EngineSettings settings = new EngineSettings(16, 64, 32, 8, 256, 16, true, 0, true, List.of());
    try (Driver e = engine(settings, SchedulingPolicy.FCFS)) {
      assertEquals(32, e.engine.core().maxModelLen());
      Rejection longPrompt = e.add(prompt("a", "word ".repeat(40), greedy(2)));
      assertEquals("prompt", longPrompt.param());
      assertTrue(longPrompt.getMessage().contains("maximum context length is 32 tokens"));
      assertEquals("max_tokens", e.add(prompt("b", "hello", greedy(32))).param());
      assertEquals("priority", e.add(prompt("c", "hello", greedy(2)).withPriority(3)).param());
      // No in-band "unset": the largest int is a max_tokens like any other (issue 21: it was the
      // sentinel, so it ran to the context instead of being refused as vLLM refuses it).
      assertEquals("max_tokens", e.add(prompt("f", "hello", greedy(Integer.MAX_VALUE))).param());
      // Unset max_tokens runs to the context: 32 - prompt.
      e.add(prompt("e", "hello", greedy(null)));
      assertEquals(32 - encode("hello").length, usage(e.drain().of("e")).completionTokens());
    }
  }

  @Test
  void theModelsGenerationConfigIsAppliedToUnsetFields() {
    // A model whose generation config is greedy: an unset temperature takes it, so n = 2 is
    // refused as vLLM refuses it; the same request with its own temperature runs.
    var greedyModel = new SamplingDefaults(0.0, null, null, null, null, null, null);
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
    try (Driver e =
        new Driver(TestEngines.demo(EngineSettings.small(), SchedulingPolicy.FCFS, greedyModel))) {
      assertEquals("n", e.add(prompt("a", "hello", unset)).param());
      assertNull(
          e.add(prompt("b", "hello", unset.toBuilder().temperature(0.8).build())),
          "the request's own temperature wins");
      assertEquals(6, usage(e.drain().of("b")).completionTokens());
    }
  }

  @Test
  void rulesThatNeedTheModelAreTheEnginesAlone() {
    EngineSettings settings = new EngineSettings(16, 64, 32, 8, 256, 16, true, 0, true, List.of());
    try (Driver e = engine(settings, SchedulingPolicy.FCFS)) {
      Rejection truncate =
          e.add(prompt("t", "hello", greedy(2)).toBuilder().truncatePromptTokens(33).build());
      assertEquals("truncate_prompt_tokens", truncate.param());
      assertTrue(
          truncate.getMessage().contains("greater than max_model_len (32)"), truncate.getMessage());
      Rejection priority = e.add(prompt("p", "hello", greedy(2)).withPriority(1));
      assertTrue(
          priority.getMessage().contains("does not use priority scheduling"),
          priority.getMessage());
    }
  }

  @Test
  void promptLogprobsStartWithNullAndMatchTheReference() {
    SamplingParams p = greedy(1).toBuilder().logprobs(2).promptLogprobs(3).build();
    try (Driver e = engine(EngineSettings.small(), SchedulingPolicy.FCFS)) {
      e.add(prompt("p", "Logprobs of a prompt", p));
      List<RequestUpdate> updates = e.drain().of("p");
      RequestUpdate.Started s = started(updates);
      int[] ids = encode("Logprobs of a prompt");
      assertEquals(ids.length, s.promptLogprobs().size());
      assertNull(s.promptLogprobs().get(0));
      // Position 1 is predicted by the logits after token 0.
      float[] row = referenceRow(List.of(ids[0]), 1);
      double max = Double.NEGATIVE_INFINITY, sum = 0;
      for (float v : row) max = Math.max(max, v);
      for (float v : row) sum += Math.exp(v - max);
      double expected = row[ids[1]] - max - Math.log(sum);
      LogprobsText first = s.promptLogprobs().get(1);
      assertEquals(ids[1], first.chosen().tokenId());
      assertEquals(expected, first.chosen().logprob(), 1e-4);
      LogprobsText sampled = updates.get(0).choices().get(0).logprobs().get(0);
      assertEquals(1, sampled.chosen().rank(), "greedy picks the top token");
      assertEquals(2, sampled.top().size());
    }
  }

  /**
   * Issue 21: a long prompt's logprobs are computed a bounded number of rows per step (here 110 of
   * the demo model's 151,936-wide rows), and the entries across the chunk boundaries still match a
   * from-scratch forward pass.
   */
  @Test
  void longPromptLogprobsAreComputedInBoundedChunksAndStillMatchTheReference() {
    SamplingParams p = greedy(1).toBuilder().promptLogprobs(0).build();
    String text = "The quick brown fox jumps over the lazy dog. ".repeat(30);
    int[] ids = encode(text);
    int rows = dev.troupe.engine.core.EngineCoreAccess.promptLogitsRows(151_936);
    assertTrue(ids.length > 2 * rows, ids.length + " tokens span three chunks of " + rows);
    try (Driver e = engine(EngineSettings.small().withNumBlocks(64), SchedulingPolicy.FCFS)) {
      e.add(prompt("long", text, p));
      RequestUpdate.Started s = started(e.drain().of("long"));
      assertEquals(ids.length, s.promptLogprobs().size());
      for (int position : new int[] {1, rows, rows + 1, 2 * rows + 1, ids.length - 1}) {
        List<Integer> prefix = new ArrayList<>();
        for (int i = 0; i < position; i++) prefix.add(ids[i]);
        float[] row = referenceRow(prefix, prefix.size());
        double max = Double.NEGATIVE_INFINITY, sum = 0;
        for (float v : row) max = Math.max(max, v);
        for (float v : row) sum += Math.exp(v - max);
        LogprobsText entry = s.promptLogprobs().get(position);
        assertEquals(ids[position], entry.chosen().tokenId());
        assertEquals(
            row[ids[position]] - max - Math.log(sum),
            entry.chosen().logprob(),
            1e-3,
            "position " + position);
      }
    }
  }

  @Test
  void chatMessagesAreRenderedWithTheModelsTemplate() {
    try (Driver e = engine(EngineSettings.small(), SchedulingPolicy.FCFS)) {
      List<Map<String, Object>> messages =
          List.of(
              Map.of("role", "system", "content", "Be brief."),
              Map.of("role", "user", "content", "Hi"));
      e.add(
          GenerationRequest.chat("chat", messages, greedy(3)).toBuilder()
              .returnTokenIds(true)
              .build());
      int[] ids = started(e.drain().of("chat")).promptTokenIds();
      String prompt = TEXT.tokenizer().decode(ids, false, true);
      assertTrue(
          prompt.startsWith(
              "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"),
          prompt);
      // A request template replaces the model's.
      InputProcessor inputs = e.engine.inputs();
      InputProcessor.Tokenized t =
          inputs.tokenize(
              messages,
              null,
              null,
              true,
              false,
              false,
              "{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}",
              Map.of(),
              false);
      assertEquals("[system]Be brief.[user]Hi", TEXT.tokenizer().decode(t.tokens(), false, true));
      Rejection bad =
          assertThrows(
              Rejection.class,
              () ->
                  inputs.tokenize(
                      messages, null, null, true, false, false, "{% for %}", Map.of(), false));
      assertEquals("chat_template", bad.param());
    }
  }

  @Test
  void beamSearchForksSequencesAndMatchesASearchOnRecomputedLogits() {
    SamplingParams p = greedy(5).toBuilder().n(3).useBeamSearch(true).build();
    String text = "Beam search over a prompt";
    // Blocks of 4: beams share and copy partial blocks as they branch.
    EngineSettings settings = new EngineSettings(4, 64, 0, 8, 256, 16, true, 0, true, List.of());
    try (Driver e = engine(settings, SchedulingPolicy.FCFS)) {
      e.add(prompt("beam", text, p));
      List<RequestUpdate> updates = e.drain().of("beam");
      assertEquals(0, e.engine.core().scheduler().blocks().numUsed());
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
          rows.add(referenceRow(seq, ids.length));
        }
        search.step(rows);
      }
      var results = search.results();
      assertEquals(3, results.size());
      for (int i = 0; i < 3; i++) {
        List<Integer> expected = new ArrayList<>();
        for (int t : results.get(i).tokens()) expected.add(t);
        assertEquals(expected, tokens(updates, i), "beam " + i);
      }
      assertEquals(15, usage(updates).completionTokens());
    }
  }

  @Test
  void thePriorityPolicyRunsLowerValuesFirst() {
    EngineSettings oneAtATime = EngineSettings.small().withMaxNumSeqs(1);
    try (Driver e = engine(oneAtATime, SchedulingPolicy.PRIORITY)) {
      e.add(prompt("background", "hello", greedy(2)).withPriority(5));
      e.add(prompt("interactive", "hello", greedy(2)).withPriority(-1));
      List<String> startOrder = new ArrayList<>();
      while (e.engine.hasWork())
        for (RequestUpdate u : e.step()) if (u.started() != null) startOrder.add(u.requestId());
      assertEquals(List.of("interactive", "background"), startOrder);
    }
  }

  @Test
  void tokenizeAndDetokenize() {
    try (Driver e = engine(EngineSettings.small(), SchedulingPolicy.FCFS)) {
      InputProcessor inputs = e.engine.inputs();
      InputProcessor.Tokenized t =
          inputs.tokenize(null, "Hello world", null, false, false, true, null, Map.of(), true);
      assertEquals(encode("Hello world").length, t.tokens().length);
      assertEquals(t.tokens().length, t.tokenStrs().size());
      List<Integer> ids = new ArrayList<>();
      for (int id : t.tokens()) ids.add(id);
      assertEquals("Hello world", inputs.detokenize(ids));
      assertThrows(Rejection.class, () -> inputs.detokenize(List.of(-5)));
    }
  }
}
