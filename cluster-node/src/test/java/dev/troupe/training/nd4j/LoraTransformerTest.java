package dev.troupe.training.nd4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.ModelRunner;
import dev.troupe.engine.cpu.CpuModelRunner;
import dev.troupe.engine.testing.MapWeights;
import dev.troupe.engine.testing.TinyModels;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.nd4j.linalg.api.buffer.DataType;

/**
 * The training forward against an independent scalar decoder, and every parameter's gradient
 * against central finite differences, in double precision.
 */
class LoraTransformerTest {
  // a row of two packed segments: positions restart, attention must not cross
  private static final int[] TOKENS = {1, 5, 9, 3, 7, 2, 4, 8, 6, 0, 11};
  private static final int[] POSITIONS = {0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4};
  private static final int[] SEGMENTS = {0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1};

  private static void randomizeB(LoraTransformer m, long seed) {
    Random r = new Random(seed);
    for (Map.Entry<String, double[]> e : m.parameters().entrySet())
      if (e.getKey().endsWith(".lora_B"))
        for (int i = 0; i < e.getValue().length; i++) e.getValue()[i] = 0.3 * r.nextGaussian();
  }

  /** Merged weights W + s·B·A for the scalar reference. */
  private static Map<String, float[]> merged(TinyWeights base, LoraTransformer m, LoraSpec spec) {
    Map<String, float[]> out = new HashMap<>(base.tensors);
    for (String name : m.parameters().keySet()) {
      if (!name.endsWith(".lora_A")) continue;
      String module = name.substring(0, name.length() - 7);
      double[] a = m.parameters().get(name);
      double[] b = m.parameters().get(module + ".lora_B");
      long[] as = m.shape(name);
      int r = (int) as[0];
      int in = (int) as[1];
      int outDim = b.length / r;
      float[] w = out.get(module + ".weight").clone();
      for (int o = 0; o < outDim; o++)
        for (int i = 0; i < in; i++) {
          double s = 0;
          for (int k = 0; k < r; k++) s += b[o * r + k] * a[k * in + i];
          w[o * in + i] += (float) (spec.scale() * s);
        }
      out.put(module + ".weight", w);
    }
    return out;
  }

  private static int[] slice(int[] a, int from, int to) {
    return java.util.Arrays.copyOfRange(a, from, to);
  }

  private static void assertForwardMatchesScalar(ModelConfig c) {
    TinyWeights base = new TinyWeights(c, 42);
    LoraSpec spec = new LoraSpec(2, 4, LoraSpec.ALL_TARGETS, false, 7);
    LoraTransformer m = new LoraTransformer(c, base.source(c), spec, DataType.DOUBLE);
    randomizeB(m, 3);
    double[] lp = m.forward(TOKENS, POSITIONS, SEGMENTS).logprobs();
    ScalarDecoder ref = new ScalarDecoder(c, merged(base, m, spec));
    // each segment alone through the reference: packing must not change anything
    double[] first = ref.logprobs(slice(TOKENS, 0, 6));
    double[] second = ref.logprobs(slice(TOKENS, 6, 11));
    for (int t = 0; t < 5; t++) assertEquals(first[t], lp[t], 1e-5, c.architecture() + " t=" + t);
    for (int t = 0; t < 4; t++)
      assertEquals(second[t], lp[6 + t], 1e-5, c.architecture() + " t=" + (6 + t));
    // logprobs were rounded through float weights only, so they are real distributions
    for (int t = 0; t < 5; t++) assertTrue(lp[t] < 0);
  }

  @Test
  void forwardMatchesScalarReferenceForLlamaQwen2AndQwen3() {
    assertForwardMatchesScalar(TinyWeights.llama(false));
    assertForwardMatchesScalar(TinyWeights.llama(true));
    assertForwardMatchesScalar(TinyWeights.qwen2());
    assertForwardMatchesScalar(TinyWeights.qwen3());
  }

  @Test
  void zeroBLeavesTheBaseModelUnchanged() {
    ModelConfig c = TinyWeights.qwen2();
    TinyWeights base = new TinyWeights(c, 5);
    LoraTransformer m = new LoraTransformer(c, base.source(c), LoraSpec.DEFAULT, DataType.DOUBLE);
    double[] lp = m.forward(slice(TOKENS, 0, 6), slice(POSITIONS, 0, 6), new int[6]).logprobs();
    double[] ref = new ScalarDecoder(c, base.tensors).logprobs(slice(TOKENS, 0, 6));
    for (int t = 0; t < 5; t++) assertEquals(ref[t], lp[t], 1e-9);
  }

  private static void assertGradientsMatchFiniteDifferences(ModelConfig c, LoraSpec spec) {
    TinyWeights base = new TinyWeights(c, 11);
    LoraTransformer m = new LoraTransformer(c, base.source(c), spec, DataType.DOUBLE);
    if (!spec.fullFineTune()) randomizeB(m, 9);
    // L = Σ_t coef_t · logprob_t, so dL/dlogprob = coef (last entry has no target)
    Random r = new Random(1);
    double[] coef = new double[TOKENS.length];
    for (int t = 0; t < coef.length - 1; t++) coef[t] = r.nextGaussian();
    LoraTransformer.Output out = m.forwardBackward(TOKENS, POSITIONS, SEGMENTS, lp -> coef);
    assertEquals(m.parameters().keySet(), out.gradients().keySet());
    int checked = 0;
    for (String name : List.copyOf(m.parameters().keySet())) {
      double[] p = m.parameters().get(name);
      double[] g = out.gradients().get(name);
      // three entries of every parameter tensor, spread over it
      for (int idx : new int[] {0, p.length / 2, p.length - 1}) {
        double saved = p[idx];
        double h = 1e-5;
        p[idx] = saved + h;
        double up = dot(coef, m.forward(TOKENS, POSITIONS, SEGMENTS).logprobs());
        p[idx] = saved - h;
        double down = dot(coef, m.forward(TOKENS, POSITIONS, SEGMENTS).logprobs());
        p[idx] = saved;
        double fd = (up - down) / (2 * h);
        assertEquals(fd, g[idx], 1e-6 + 1e-5 * Math.abs(fd), name + "[" + idx + "]");
        checked++;
      }
    }
    assertTrue(checked >= 3 * m.parameters().size());
  }

  private static double dot(double[] a, double[] b) {
    double s = 0;
    for (int i = 0; i < a.length; i++) s += a[i] * b[i];
    return s;
  }

  @Test
  void loraGradientsMatchFiniteDifferencesInEveryLayerAndModule() {
    LoraSpec spec = new LoraSpec(2, 4, LoraSpec.ALL_TARGETS, false, 7);
    assertGradientsMatchFiniteDifferences(TinyWeights.llama(false), spec);
    assertGradientsMatchFiniteDifferences(TinyWeights.qwen3(), spec);
  }

  @Test
  void fullFineTuningGradientsMatchFiniteDifferencesIncludingNorms() {
    LoraSpec spec = new LoraSpec(1, 1, List.of(), true, 7);
    assertGradientsMatchFiniteDifferences(TinyWeights.qwen3(), spec);
    assertGradientsMatchFiniteDifferences(TinyWeights.qwen2(), spec);
  }

  @Test
  void floatLogprobsMatchTheServingRunnerWithTheAdapterRegistered() {
    for (TinyModels.Arch arch : TinyModels.Arch.values())
      assertMatchesServingRunner(TinyModels.config(arch), arch.toString());
  }

  @Test
  void mistralsSlidingWindowIsTheServingRunnersToo() {
    // a window of 3 over 8 tokens: a full causal mask would give other logprobs from position 3
    assertMatchesServingRunner(
        TinyModels.withSlidingWindow(TinyModels.config(TinyModels.Arch.MISTRAL), 3), "window 3");
  }

  private static void assertMatchesServingRunner(ModelConfig c, String arch) {
    MapWeights w = new MapWeights(c, TinyModels.randomWeights(c, 17));
    LoraSpec spec = new LoraSpec(4, 8, LoraSpec.ALL_TARGETS, false, 5);
    LoraTransformer m = new LoraTransformer(c, w, spec, DataType.FLOAT);
    randomizeB(m, 23);
    int[] tokens = {1, 40, 7, 93, 12, 5, 66, 31};
    double[] lp = m.forward(tokens, new int[] {0, 1, 2, 3, 4, 5, 6, 7}, new int[8]).logprobs();
    try (ModelRunner runner = CpuModelRunner.load(c, w, 4, 16)) {
      runner.registerAdapter(1, m.toAdapter(1));
      float[][] logits =
          runner
              .forward(List.of(new ModelRunner.SequenceChunk(tokens, 0, new int[] {0}, true, 1)))
              .get(0);
      for (int t = 0; t + 1 < tokens.length; t++) {
        double max = Double.NEGATIVE_INFINITY;
        for (float z : logits[t]) max = Math.max(max, z);
        double sum = 0;
        for (float z : logits[t]) sum += Math.exp(z - max);
        double expected = logits[t][tokens[t + 1]] - max - Math.log(sum);
        assertEquals(expected, lp[t], 2e-4, arch + " t=" + t);
      }
    }
  }

  @Test
  void scoringOnlyNeededTargetsGivesTheSameLogprobsAndGradients() {
    ModelConfig c = TinyWeights.qwen3();
    TinyWeights base = new TinyWeights(c, 4);
    LoraTransformer m =
        new LoraTransformer(
            c, base.source(c), new LoraSpec(2, 4, LoraSpec.ALL_TARGETS, false, 7), DataType.DOUBLE);
    randomizeB(m, 8);
    boolean[] needed = new boolean[TOKENS.length];
    double[] coef = new double[TOKENS.length];
    for (int t : new int[] {2, 3, 7, 9}) {
      needed[t] = true;
      coef[t] = 0.3 * t - 1;
    }
    LoraTransformer.Output all = m.forwardBackward(TOKENS, POSITIONS, SEGMENTS, lp -> coef);
    LoraTransformer.Output some =
        m.forwardBackward(TOKENS, POSITIONS, SEGMENTS, needed, lp -> coef);
    for (int t = 0; t < TOKENS.length; t++)
      assertEquals(needed[t] ? all.logprobs()[t] : 0.0, some.logprobs()[t], 1e-12, "t=" + t);
    for (String name : all.gradients().keySet()) {
      double[] a = all.gradients().get(name);
      double[] b = some.gradients().get(name);
      for (int i = 0; i < a.length; i++) assertEquals(a[i], b[i], 1e-12, name);
    }
  }

  @Test
  void targetsSelectWhichModulesGetAdapters() {
    LoraSpec spec = new LoraSpec(4, 8, List.of("q_proj", "v_proj"), false, 1);
    LoraTransformer m =
        new LoraTransformer(
            TinyWeights.llama(false),
            new TinyWeights(TinyWeights.llama(false), 1).source(TinyWeights.llama(false)),
            spec,
            DataType.FLOAT);
    assertEquals(2 * 2 * 2, m.parameters().size()); // 2 layers × 2 modules × (A, B)
    assertTrue(m.parameters().containsKey("model.layers.1.self_attn.v_proj.lora_B"));
    for (double b : m.parameters().get("model.layers.0.self_attn.q_proj.lora_B"))
      assertEquals(0.0, b);
    var adapter = m.toAdapter(3);
    assertEquals(3, adapter.version());
    assertEquals(2.0, adapter.scale());
    assertEquals(4 * 16, adapter.a().get("model.layers.0.self_attn.q_proj").length);
  }
}
