package dev.troupe.engine.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.engine.DeviceSampling;
import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.ModelRunner;
import dev.troupe.engine.core.EngineCore;
import dev.troupe.engine.cpu.CpuModelRunner;
import dev.troupe.engine.cuda.CoreRuns.Req;
import dev.troupe.engine.cuda.CoreRuns.Result;
import dev.troupe.engine.model.DType;
import dev.troupe.engine.sampling.SamplerFactory;
import dev.troupe.engine.sampling.StepLogprobs;
import dev.troupe.engine.sampling.TokenLogprob;
import dev.troupe.engine.testing.LogCapture;
import dev.troupe.engine.testing.MapWeights;
import dev.troupe.engine.testing.TinyModels;
import dev.troupe.engine.testing.TinyModels.Arch;
import dev.troupe.protocol.cluster.SamplingParams;
import dev.troupe.protocol.cluster.SamplingParams.LogitsProcessorSpec;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The engine core over the CUDA runner samples on the device ({@code SamplingStage} → {@code
 * forwardSample}) and produces what the same core produces over the CPU runner: the same tokens,
 * finishes and logprobs, for every request feature at once in one batch — greedy, seeded sampling
 * with top-k/top-p/min-p, n &gt; 1 (forked prompts, copy-on-write), the three penalties, logit
 * bias, allowed ids, bad words, min_tokens with stop ids, prompt logprobs and beam search (host
 * logits), and rows the device cannot sample (a custom logits processor, a token constraint,
 * whole-vocabulary logprobs) falling back to the host beside device rows.
 *
 * <p>Tolerances: against the same CUDA runner sampling on the host (identical logits) tokens and
 * finishes are equal and logprobs within 1e-4 (the device's float log-softmax against the host's
 * double one). Against the CPU runner: on a model whose layers add nothing (logits from the last
 * token alone, where the two runners agree to ~1e-6, {@link CoreRuns#spikeModel}) every sampled
 * token is equal and logprobs within 1e-4; on a model whose layers matter the runners differ by the
 * GPU's BF16 roundings (≤ 1e-2 of a logits row, CudaModelRunnerTest), so greedy tokens are equal
 * where the logits are well separated — the test checks that every step's top-2 gap on the CPU
 * exceeds 0.1 nats, 10× the largest logprob difference allowed (1e-2) — and logprobs agree within
 * 1e-2.
 */
class DeviceSamplingEngineTest {
  static final int BLOCKS = 120;

  static SamplingParams.Builder base(int maxTokens) {
    return SamplingParams.builder().maxTokens(maxTokens).ignoreEos(true);
  }

  /** Every feature at once: these requests share the batch from the first step on. */
  static List<Req> everything() {
    List<Req> r = new ArrayList<>();
    r.add(
        new Req(
            "greedy", ids(5, 6, 7, 8, 9, 10, 11), base(12).temperature(0.0).logprobs(3).build()));
    r.add(
        new Req(
            "seeded-n3",
            ids(12, 40, 41, 42, 43, 44, 45, 46, 47, 48),
            base(12).n(3).temperature(0.9).topK(20).topP(0.9).seed(7L).logprobs(2).build()));
    r.add(
        new Req(
            "penalties",
            ids(20, 21, 22, 23, 24),
            base(16)
                .temperature(1.1)
                .seed(11L)
                .repetitionPenalty(1.4)
                .frequencyPenalty(0.6)
                .presencePenalty(0.4)
                .minP(0.02)
                .build()));
    r.add(
        new Req(
            "bias-allowed",
            ids(30, 31, 32, 33, 34, 35, 36, 37, 38),
            base(10)
                .temperature(0.8)
                .seed(3L)
                .allowedTokenIds(List.of(4, 6, 10, 15, 19, 23, 27, 50, 61, 77, 90))
                .logitBias(Map.of(4, 3.0, 10, -100.0))
                .logprobs(1)
                .build()));
    r.add(
        new Req(
            "min-tokens",
            ids(50, 51, 52, 53),
            SamplingParams.builder()
                .maxTokens(20)
                .temperature(1.0)
                .seed(5L)
                .minTokens(6)
                .stopTokenIds(List.of(17))
                .logitBias(Map.of(2, 7.0, 17, 6.0))
                .build()));
    r.add(
        new Req(
            "bad-words",
            ids(60, 61, 62, 63, 64, 65),
            base(12).temperature(1.0).seed(13L).badWords(List.of("<9>", "<5><6>")).build()));
    r.add(
        new Req(
            "processor-on-host",
            ids(70, 71, 72, 73, 74, 75, 76, 77),
            base(10)
                .temperature(0.7)
                .seed(17L)
                .logitsProcessors(
                    List.of(
                        new LogitsProcessorSpec(CoreRuns.BanOddTokens.class.getName(), null, null)))
                .build()));
    r.add(
        new Req(
            "all-logprobs-on-host",
            ids(80, 81, 82),
            base(6).temperature(1.0).seed(19L).logprobs(-1).build()));
    r.add(
        new Req(
            "constraint-on-host",
            ids(85, 86, 87, 88, 89),
            base(8).n(2).temperature(1.0).seed(23L).build(),
            List.of(new CoreRuns.MultiplesOfThree(), new CoreRuns.MultiplesOfThree())));
    r.add(
        new Req(
            "prompt-logprobs",
            ids(1, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25),
            base(5).temperature(0.0).promptLogprobs(2).build()));
    r.add(
        new Req(
            "beam",
            ids(90, 91, 92, 93),
            base(5).n(2).temperature(0.0).useBeamSearch(true).logprobs(1).build()));
    return r;
  }

  static int[] ids(int... v) {
    return v;
  }

  /** A CUDA runner with its device sampling hidden: the core samples every row on the host. */
  static ModelRunner hostSampling(CudaModelRunner r) {
    return new ModelRunner() {
      public ModelConfig config() {
        return r.config();
      }

      public int blockSize() {
        return r.blockSize();
      }

      public int numBlocks() {
        return r.numBlocks();
      }

      public List<float[][]> forward(List<SequenceChunk> batch) {
        return r.forward(batch);
      }

      public void copyBlock(int src, int dst) {
        r.copyBlock(src, dst);
      }

      public void close() {
        r.close();
      }
    };
  }

  static CudaModelRunner cuda(GpuBackends b, ModelConfig c, Map<String, float[]> w) {
    CudaModelRunner r =
        CudaModelRunner.load(b.open(c, 4), c, new MapWeights(c, w), 4, BLOCKS, 0, 48);
    if (b == GpuBackends.EMULATED) r.samplerThreads(64); // every thread is a fiber there
    return r;
  }

  static Map<String, Result> run(ModelRunner runner, List<Req> reqs, boolean expectDevice) {
    SamplerFactory f = CoreRuns.samplers(runner.config().vocabSize());
    try (EngineCore core = CoreRuns.core(runner, f)) {
      Map<String, Result> out = CoreRuns.run(core, f, reqs);
      assertEquals(expectDevice, core.sampling().onDevice());
      // one sampled row per generated token (beam search samples none): on a device runner the
      // requests named "…-on-host" are sampled on the host, every other on the device
      long host = 0, device = 0;
      for (Req q : reqs) {
        if (q.params().useBeamSearch()) continue;
        long tokens = out.get(q.id()).tokens.values().stream().mapToLong(List::size).sum();
        if (expectDevice && !q.id().endsWith("-on-host")) device += tokens;
        else host += tokens;
      }
      assertEquals(device, core.sampling().deviceRows(), "rows sampled on the device");
      assertEquals(host, core.sampling().hostRows(), "rows sampled on the host");
      return out;
    }
  }

  @ParameterizedTest
  @MethodSource("dev.troupe.engine.cuda.GpuBackends#selected")
  void deviceSamplingEqualsHostSamplingOfTheSameLogits(GpuBackends b) {
    ModelConfig c = TinyModels.config(Arch.LLAMA);
    Map<String, float[]> w = CudaModelRunnerTest.bf16Weights(c, 3);
    Map<String, Result> device = run(cuda(b, c, w), everything(), true);
    Map<String, Result> host = run(hostSampling(cuda(b, c, w)), everything(), false);
    assertSame(host, device, 1e-4, b + " device vs host sampling");
  }

  @ParameterizedTest
  @MethodSource("dev.troupe.engine.cuda.GpuBackends#selected")
  void deviceSamplingOnTheGpuRunnerEqualsTheCpuRunner(GpuBackends b) {
    ModelConfig c = TinyModels.config(Arch.LLAMA);
    Map<String, float[]> w = CoreRuns.spikeModel(c, 4.0, 0.25, 0.0);
    Map<String, Result> device = run(cuda(b, c, w), everything(), true);
    Map<String, Result> cpu =
        run(
            CpuModelRunner.load(c, new MapWeights(c, w), DType.BF16, BLOCKS, 4),
            everything(),
            false);
    assertSame(cpu, device, 1e-4, b + " GPU vs CPU runner");
  }

  @ParameterizedTest
  @MethodSource("dev.troupe.engine.cuda.GpuBackends#selected")
  void greedyOverRealAttentionEqualsTheCpuRunnerWithinBf16(GpuBackends b) {
    ModelConfig c = TinyModels.config(Arch.LLAMA);
    Map<String, float[]> w = CoreRuns.spikeModel(c, 8.0, 0.05, 1.0);
    List<Req> reqs = new ArrayList<>();
    for (int i = 0; i < 6; i++) {
      int[] prompt = new int[5 + 3 * i];
      for (int j = 0; j < prompt.length; j++) prompt[j] = (7 * i + 13 * j + 1) % c.vocabSize();
      reqs.add(new Req("g" + i, prompt, base(14).temperature(0.0).logprobs(2).build()));
    }
    Map<String, Result> device = run(cuda(b, c, w), reqs, true);
    Map<String, Result> cpu =
        run(CpuModelRunner.load(c, new MapWeights(c, w), DType.BF16, BLOCKS, 4), reqs, false);
    double minGap = Double.MAX_VALUE;
    for (Result r : cpu.values())
      for (StepLogprobs s : r.logprobs.get(0))
        minGap = Math.min(minGap, s.top().get(0).logprob() - s.top().get(1).logprob());
    System.out.printf("[%s] smallest top-2 gap of the greedy steps on the CPU: %.3f%n", b, minGap);
    assertTrue(minGap > 0.1, "the model is not well separated: gap " + minGap);
    assertSame(cpu, device, 1e-2, b + " GPU vs CPU runner, layers on");
  }

  @ParameterizedTest
  @MethodSource("dev.troupe.engine.cuda.GpuBackends#selected")
  void aFailedDeviceStepIsRunAgainWithTheSameDraws(GpuBackends b) {
    ModelConfig c = TinyModels.config(Arch.QWEN3);
    Map<String, float[]> w = CudaModelRunnerTest.bf16Weights(c, 9);
    List<Req> reqs = everything().subList(1, 3); // seeded n = 3 (forked), penalties
    Map<String, Result> want = run(cuda(b, c, w), reqs, true);
    Map<String, Result> got;
    try (LogCapture log = LogCapture.of(EngineCore.class)) {
      got = run(failingAt(cuda(b, c, w), Set.of(3, 8)), reqs, true);
      assertEquals(2, log.errors().size(), "each failed step logged: " + log.errors());
    }
    assertSame(want, got, 0, b + " steps failed and recomputed");
  }

  /**
   * Request migration over device sampling: a seeded request resumed on a fresh engine from the
   * tokens another replica delivered ({@code Sampler.replay}: one draw per random step) continues
   * with exactly the tokens, logprobs and finishes of the uninterrupted run, at every cut — so a
   * device row's kept draw and the replayed draws are the same stream.
   */
  @ParameterizedTest
  @MethodSource("dev.troupe.engine.cuda.GpuBackends#selected")
  void aResumedRequestContinuesAsTheUninterruptedRun(GpuBackends b) {
    ModelConfig c = TinyModels.config(Arch.QWEN3);
    Map<String, float[]> w = CudaModelRunnerTest.bf16Weights(c, 9);
    List<Req> all = everything();
    List<Req> reqs = List.of(all.get(1), all.get(2), all.get(4)); // seeded n = 3, penalties, min
    Map<String, Result> whole = run(cuda(b, c, w), reqs, true);
    for (int cut : new int[] {1, 4, 9}) {
      List<Req> resumed = new ArrayList<>();
      for (Req q : reqs) resumed.add(q.resumedAfter(whole.get(q.id()), cut));
      Map<String, Result> rest = run(cuda(b, c, w), resumed, true);
      for (Req q : reqs) {
        Result a = whole.get(q.id()), g = rest.get(q.id());
        String what = b + " " + q.id() + " resumed after " + cut;
        assertNull(g.failure, what + " failed");
        for (int i = 0; i < q.params().n(); i++) {
          List<Integer> tokens = a.tokens.get(i);
          int k = Math.min(cut, tokens.size());
          List<Integer> joined = new ArrayList<>(tokens.subList(0, k));
          joined.addAll(g.tokens.getOrDefault(i, List.of()));
          assertEquals(tokens, joined, what + " choice " + i + " tokens");
          if (k < tokens.size() || !a.finishes.containsKey(i))
            assertEquals(a.finishes.get(i), g.finishes.get(i), what + " choice " + i + " finish");
          // the resumed run computes the cut tokens as one prompt chunk where the whole run decoded
          // them a step at a time: the emulator's products do not depend on the row count, cuBLAS
          // picks its algorithm by shape, so on a GPU the same logprob may differ in its last bits
          // (the H200 run of 2026-11-28: -3.9004271 against -3.9004273); the tokens may not
          if (a.logprobs.containsKey(i))
            logprobs(
                a.logprobs.get(i).subList(k, tokens.size()),
                g.logprobs.getOrDefault(i, List.of()),
                b == GpuBackends.CUDA ? 1e-5 : 0,
                what + " choice " + i);
        }
      }
    }
  }

  /** The runner with its calls number {@code failing} (1-based) failing before they start. */
  static ModelRunner failingAt(CudaModelRunner r, Set<Integer> failing) {
    class Failing implements ModelRunner, DeviceSampling {
      int calls;

      public ModelConfig config() {
        return r.config();
      }

      public int blockSize() {
        return r.blockSize();
      }

      public int numBlocks() {
        return r.numBlocks();
      }

      public List<float[][]> forward(List<SequenceChunk> batch) {
        throw new AssertionError("a device runner is called through forwardSample");
      }

      public Step forwardSample(List<SequenceChunk> batch, boolean[] host, List<Row> rows) {
        if (failing.contains(++calls)) throw new IllegalStateException("injected failure");
        return r.forwardSample(batch, host, rows);
      }

      public void copyBlock(int src, int dst) {
        r.copyBlock(src, dst);
      }

      public void close() {
        r.close();
      }
    }
    return new Failing();
  }

  /** Same tokens, finishes and logprob ids, logprob values within {@code tol}. */
  static void assertSame(
      Map<String, Result> want, Map<String, Result> got, double tol, String what) {
    assertEquals(want.keySet(), got.keySet());
    for (String id : want.keySet()) {
      Result a = want.get(id), g = got.get(id);
      String w = what + ": " + id;
      assertNull(a.failure, w + " failed: " + (a.failure == null ? "" : a.failure.getMessage()));
      assertNull(g.failure, w + " failed: " + (g.failure == null ? "" : g.failure.getMessage()));
      assertEquals(a.tokens, g.tokens, w + " tokens");
      assertEquals(a.finishes, g.finishes, w + " finishes");
      assertFalse(a.finishes.isEmpty(), w + " never finished");
      assertEquals(a.logprobs.keySet(), g.logprobs.keySet(), w + " logprobs");
      for (int choice : a.logprobs.keySet())
        logprobs(a.logprobs.get(choice), g.logprobs.get(choice), tol, w + " choice " + choice);
      assertEquals(a.promptLogprobs == null, g.promptLogprobs == null, w + " prompt logprobs");
      if (a.promptLogprobs != null)
        logprobs(
            a.promptLogprobs.subList(1, a.promptLogprobs.size()),
            g.promptLogprobs.subList(1, g.promptLogprobs.size()),
            tol,
            w + " prompt");
    }
  }

  static void logprobs(List<StepLogprobs> want, List<StepLogprobs> got, double tol, String what) {
    assertEquals(want.size(), got.size(), what + " positions");
    for (int i = 0; i < want.size(); i++) {
      entry(want.get(i).chosen(), got.get(i).chosen(), tol, what + " position " + i);
      assertEquals(want.get(i).top().size(), got.get(i).top().size(), what + " top size " + i);
      for (int j = 0; j < want.get(i).top().size(); j++)
        entry(want.get(i).top().get(j), got.get(i).top().get(j), tol, what + " top " + i + "/" + j);
    }
  }

  static void entry(TokenLogprob want, TokenLogprob got, double tol, String what) {
    assertNotNull(got, what);
    assertEquals(want.tokenId(), got.tokenId(), what + " id");
    assertEquals(want.rank(), got.rank(), what + " rank");
    assertEquals(want.logprob(), got.logprob(), tol, what + " logprob");
  }

  private static void assertFalse(boolean v, String what) {
    assertTrue(!v, what);
  }
}
