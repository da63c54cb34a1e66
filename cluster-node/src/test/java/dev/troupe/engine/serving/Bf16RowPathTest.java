package dev.troupe.engine.serving;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.core.EngineSettings;
import dev.troupe.engine.cpu.CpuModelRunner;
import dev.troupe.engine.model.DType;
import dev.troupe.engine.model.DemoModel;
import dev.troupe.engine.model.Quantization;
import dev.troupe.engine.model.RandomWeights;
import dev.troupe.engine.testing.TinyModels;
import dev.troupe.protocol.cluster.GenerationRequest;
import dev.troupe.protocol.cluster.GenerationRequest.Resume;
import dev.troupe.protocol.cluster.GenerationRequest.ResumedChoice;
import dev.troupe.protocol.cluster.SamplingDefaults;
import dev.troupe.protocol.cluster.SamplingParams;
import dev.troupe.scheduler.SchedulingPolicy;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Where the CPU runner computes BF16 prompt rows on oneDNN (this CPU's BF16 dot products; skipped
 * elsewhere) and generated rows on the kernels with oneDNN's bits (on oneDNN itself when a step has
 * many), a request's greedy tokens do not depend on where or beside what its rows were computed:
 * resumed on another replica (its prompt and delivered tokens re-prefilled, generated rows on the
 * FP32 path as its decode steps were) it continues token for token for 300 tokens, and beside
 * another request's long prefill it generates what it generates alone. Under the earlier rule (a
 * step's row count chose the path: over 64 rows, every row on oneDNN) both differed: the
 * re-prefilled tokens' keys and values, and a decode row in a step with a long prefill chunk, came
 * from BF16-rounded activations.
 */
class Bf16RowPathTest {
  /** 160 blocks of 16, chunks of at most 256 tokens, no prefix cache. */
  private static final EngineSettings SETTINGS =
      new EngineSettings(16, 160, 0, 8, 256, 16, true, 100, true, List.of(), false);

  private static final String PROMPT =
      "Tell me a long story about a lighthouse keeper and the sea.";

  static CpuModelRunner runner;

  /**
   * A random BF16 Llama on the demo tokenizer's vocabulary, untied, weights N(0, 0.05²): its greedy
   * tokens wander rather than repeat (the demo model's tied embeddings repeat one token), and the
   * top two logits are often within the 1e-2 that BF16-rounded activations move them, so a row on
   * the other path shows in the tokens.
   */
  @BeforeAll
  static void openRunner() {
    ModelConfig c = TinyModels.llama(DemoModel.config().vocabSize(), 128, 2, 4, 2, 256);
    runner = CpuModelRunner.load(c, new RandomWeights(c, 27, 0.05, "random"), DType.BF16, 160, 16);
    Assumptions.assumeTrue(
        runner.promptRowsOnOneDnn(),
        "prompt rows are not on oneDNN here (no BF16 matmul hardware through oneDNN, or off)");
  }

  @AfterAll
  static void closeRunner() {
    if (runner != null) runner.close();
  }

  private static Engine engine(EngineSettings settings) {
    return TestEngines.demo(
        new TestEngines.Unclosed(runner), settings, SchedulingPolicy.FCFS, SamplingDefaults.NONE);
  }

  private static SamplingParams greedy(int maxTokens) {
    return SamplingParams.builder().temperature(0.0).maxTokens(maxTokens).ignoreEos(true).build();
  }

  private static List<Integer> alone(GenerationRequest r) {
    try (Driver d = new Driver(engine(SETTINGS))) {
      assertNull(d.add(r));
      d.drain();
      assertTrue(d.failures.isEmpty(), d.failures.toString());
      return Driver.tokens(d.of(r.requestId()), 0);
    }
  }

  /** The first index where the two differ, for the message. */
  private static String firstDifference(List<Integer> want, List<Integer> got) {
    for (int i = 0; i < Math.min(want.size(), got.size()); i++)
      if (!want.get(i).equals(got.get(i))) return "first difference at token " + i;
    return "lengths " + want.size() + " and " + got.size();
  }

  @Test
  void aResumedRequestContinuesTokenForToken() {
    int total = 400;
    GenerationRequest whole = GenerationRequest.prompt("whole", PROMPT, greedy(total));
    List<Integer> tokens = alone(whole);
    assertEquals(total, tokens.size());
    // 30 delivered tokens re-prefill on the kernels, 100 on OpenBLAS's FP32 tiles
    for (int cut : new int[] {30, 100}) {
      GenerationRequest resumed =
          whole.toBuilder()
              .requestId("resumed-" + cut)
              .resume(new Resume(List.of(new ResumedChoice(tokens.subList(0, cut), false))))
              .build();
      List<Integer> want = tokens.subList(cut, total), got = alone(resumed);
      assertEquals(want, got, "resumed after " + cut + ": " + firstDifference(want, got));
    }
  }

  /**
   * A seeded sampled request resumed after 20 tokens continues draw for draw: its re-prefilled
   * generated tokens attend token by token, as their decode steps did (a piece of 8 or more rows
   * used to take the BLAS GEMMs, whose last bits differ; with activations rounded to BF16 after the
   * attention that showed as a different draw five tokens on, with the demo model: {@link
   * DemoRowPathTest}).
   */
  @Test
  void aSeededRequestResumedContinuesDrawForDraw() {
    SamplingParams p =
        SamplingParams.builder().temperature(0.9).seed(4321L).maxTokens(64).ignoreEos(true).build();
    GenerationRequest whole =
        GenerationRequest.prompt("seeded", "Tell me a story about the sea.", p);
    List<Integer> tokens = alone(whole);
    for (int cut : new int[] {5, 17, 20}) {
      GenerationRequest resumed =
          whole.toBuilder()
              .requestId("seeded-" + cut)
              .resume(new Resume(List.of(new ResumedChoice(tokens.subList(0, cut), false))))
              .build();
      List<Integer> want = tokens.subList(cut, tokens.size()), got = alone(resumed);
      assertEquals(want, got, "resumed after " + cut + ": " + firstDifference(want, got));
    }
  }

  /**
   * Generated rows compute oneDNN's bits ({@code bf16-gemm-decode-rows}): a request decoding beside
   * 17 others (steps of 18 generated rows, on oneDNN) generates what it generates alone (one row,
   * on the kernels), and so do the others. (8-bit: every generated row on the 8-bit kernels.)
   */
  @Test
  void aRequestDecodesAmongManyAsItDoesAlone() {
    int from = runner.generatedRowsOnOneDnnFrom();
    if (runner.quantization() != Quantization.NONE)
      assertEquals(0, from, "8-bit models decode on their own kernels, whatever the rows");
    else
      assertTrue(
          from > 0 && from <= 18,
          "generated rows on oneDNN from " + from + " rows (0: off, or not the kernels' bits)");
    List<GenerationRequest> all = new java.util.ArrayList<>();
    for (int i = 0; i < 18; i++)
      all.add(GenerationRequest.prompt("r" + i, i + ". " + PROMPT, greedy(90)));
    EngineSettings together =
        new EngineSettings(16, 160, 0, 32, 512, 32, true, 100, true, List.of(), false);
    try (Driver d = new Driver(engine(together))) {
      for (GenerationRequest r : all) assertNull(d.add(r));
      d.drain();
      assertTrue(d.failures.isEmpty(), d.failures.toString());
      for (GenerationRequest r : List.of(all.get(0), all.get(7), all.get(17))) {
        List<Integer> want = alone(r), got = Driver.tokens(d.of(r.requestId()), 0);
        assertEquals(want, got, r.requestId() + ": " + firstDifference(want, got));
      }
    }
  }

  /**
   * Other requests' prompts of ~450 tokens arrive while {@code a} runs, one every 4 steps (chunks
   * of up to 128 tokens, so nearly every step holds over 64 rows): from beside {@code a}'s prompt,
   * or from its third step; {@code a} generates what it generates alone.
   */
  @Test
  void otherRequestsPrefillsDoNotChangeARequestsTokens() {
    EngineSettings settings =
        new EngineSettings(16, 160, 0, 8, 128, 16, true, 100, true, List.of(), false);
    GenerationRequest a = GenerationRequest.prompt("a", PROMPT, greedy(300));
    List<Integer> want = alone(a);
    String text = " the keeper counted the waves that broke on the rocks below.";
    for (int first : new int[] {0, 2}) { // beside a's prompt, or beside its decode steps
      try (Driver d = new Driver(engine(settings))) {
        assertNull(d.add(a));
        int others = 0;
        for (int step = 0; d.engine.hasWork(); step++) {
          boolean aRuns = Driver.finish(d.of("a"), 0) == null;
          if (aRuns && step >= first && (step - first) % 4 == 0) {
            String id = "b" + others++;
            assertNull(d.add(GenerationRequest.prompt(id, id + text.repeat(40), greedy(1))));
          }
          d.step();
        }
        assertTrue(d.failures.isEmpty(), d.failures.toString());
        assertTrue(Driver.usage(d.of("b0")).promptTokens() > 400, "b0's prompt takes steps");
        assertTrue(others >= 70, "prompts beside a: " + others);
        List<Integer> got = Driver.tokens(d.of("a"), 0);
        assertEquals(want, got, "others from step " + first + ": " + firstDifference(want, got));
      }
    }
  }
}
