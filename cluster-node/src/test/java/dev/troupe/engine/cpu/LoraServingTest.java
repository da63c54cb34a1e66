package dev.troupe.engine.cpu;

import static dev.troupe.engine.cpu.CpuModelRunnerTest.maxDiff;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.engine.LoraAdapter;
import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.ModelRunner;
import dev.troupe.engine.ModelRunner.SequenceChunk;
import dev.troupe.engine.model.DType;
import dev.troupe.engine.model.Projection;
import dev.troupe.engine.model.Quantization;
import dev.troupe.engine.runner.ModelRunners;
import dev.troupe.engine.testing.MapWeights;
import dev.troupe.engine.testing.ScalarReferenceModel;
import dev.troupe.engine.testing.TinyModels;
import dev.troupe.engine.testing.TinyModels.Arch;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** LoRA served per chunk equals the scalar reference run on merged weights W + scale·B·A. */
class LoraServingTest {

  private static LoraAdapter randomAdapter(ModelConfig c, long seed, String... modules) {
    Random r = new Random(seed);
    int rank = 4;
    Map<String, float[]> a = new HashMap<>(), b = new HashMap<>();
    for (String m : modules) {
      for (int l = 0; l < c.numLayers(); l++) {
        Projection p =
            Arrays.stream(Projection.values())
                .filter(x -> x.module().equals(m))
                .findFirst()
                .orElseThrow();
        float[] am = new float[rank * p.in(c)], bm = new float[p.out(c) * rank];
        for (int i = 0; i < am.length; i++) am[i] = (float) (0.2 * r.nextGaussian());
        for (int i = 0; i < bm.length; i++) bm[i] = (float) (0.2 * r.nextGaussian());
        String key = "model.layers." + l + "." + m;
        a.put(key, am);
        b.put(key, bm);
      }
    }
    return new LoraAdapter(1, rank, 8.0, a, b);
  }

  private static MapWeights merged(ModelConfig c, Map<String, float[]> base, LoraAdapter ad) {
    Map<String, float[]> copy = new HashMap<>();
    for (Map.Entry<String, float[]> e : base.entrySet()) copy.put(e.getKey(), e.getValue().clone());
    MapWeights w = new MapWeights(c, copy);
    for (String key : ad.a().keySet()) {
      float[] wm = w.get(key + ".weight");
      float[] am = ad.a().get(key), bm = ad.b().get(key);
      int in = am.length / ad.rank(), out = bm.length / ad.rank();
      for (int o = 0; o < out; o++)
        for (int i = 0; i < in; i++) {
          double s = 0;
          for (int k = 0; k < ad.rank(); k++) s += bm[o * ad.rank() + k] * am[k * in + i];
          wm[o * in + i] += (float) (ad.scale() * s);
        }
    }
    return w;
  }

  @Test
  void adapterChunksMatchMergedWeightsAndBaseChunksStayBase() {
    ModelConfig c = TinyModels.config(Arch.QWEN3);
    Map<String, float[]> base = TinyModels.randomWeights(c, 99);
    LoraAdapter ad =
        randomAdapter(
            c,
            5,
            "self_attn.q_proj",
            "self_attn.v_proj",
            "self_attn.o_proj",
            "mlp.gate_proj",
            "mlp.down_proj");
    LoraAdapter ad2 = randomAdapter(c, 6, "self_attn.k_proj", "mlp.up_proj");
    int[] prompt = {3, 14, 15, 92, 65, 35, 89, 79, 32, 38};
    float[][] refBase = new ScalarReferenceModel(c, new MapWeights(c, base)).logits(prompt);
    float[][] refAd = new ScalarReferenceModel(c, merged(c, base, ad)).logits(prompt);
    float[][] refAd2 = new ScalarReferenceModel(c, merged(c, base, ad2)).logits(prompt);
    assertTrue(maxDiff(refBase[9], refAd[9]) > 1e-2, "the adapter must change the logits");
    try (ModelRunner m = CpuModelRunner.load(c, new MapWeights(c, base), 16, 4)) {
      m.registerAdapter(1, ad);
      m.registerAdapter(2, ad2);
      List<float[][]> out =
          m.forward(
              List.of(
                  new SequenceChunk(prompt, 0, new int[] {0, 1, 2}, true, 1),
                  new SequenceChunk(prompt, 0, new int[] {3, 4, 5}, false, 0),
                  new SequenceChunk(prompt, 0, new int[] {6, 7, 8}, false, 2)));
      for (int t = 0; t < prompt.length; t++)
        assertTrue(maxDiff(out.get(0)[t], refAd[t]) < 1e-4, "adapter row " + t);
      assertTrue(maxDiff(out.get(1)[0], refBase[9]) < 1e-4, "base chunk");
      assertTrue(maxDiff(out.get(2)[0], refAd2[9]) < 1e-4, "second adapter");
      // a decode step keeps its adapter
      float[][] dec =
          m.forward(List.of(new SequenceChunk(new int[] {7}, 10, new int[] {0, 1, 2}, false, 1)))
              .get(0);
      int[] longer = java.util.Arrays.copyOf(prompt, 11);
      longer[10] = 7;
      float[][] refLonger = new ScalarReferenceModel(c, merged(c, base, ad)).logits(longer);
      assertTrue(maxDiff(dec[0], refLonger[10]) < 1e-4);
      m.removeAdapter(1);
      assertThrows(
          IllegalArgumentException.class,
          () ->
              m.forward(
                  List.of(new SequenceChunk(new int[] {7}, 11, new int[] {0, 1, 2}, false, 1))));
      Map<String, float[]> bad = Map.of("model.layers.0.self_attn.q_proj", new float[3]);
      assertThrows(
          IllegalArgumentException.class,
          () -> m.registerAdapter(3, new LoraAdapter(1, 1, 1, bad, bad)));
      Map<String, float[]> unknown = Map.of("model.layers.9.self_attn.q_proj", new float[32]);
      assertThrows(
          IllegalArgumentException.class,
          () -> m.registerAdapter(3, new LoraAdapter(1, 1, 1, unknown, unknown)));
    }
  }

  /**
   * BF16 weights whose widths are all multiples of 32, so that where the CPU has BF16 dot products
   * a step's prompt rows run on oneDNN ({@link Bf16Gemm}) and its generated rows on the FP32 path,
   * each product two calls, and each member then adds the LoRA terms of its share of either range's
   * rows. A chunk's rows match the same rows alone on the kernels: bit for bit where they are
   * generated rows there too, within 3e-2 where they are prompt rows on oneDNN (it rounds the
   * activations to BF16; logits up to ~3 here), while the adapter moves them by far more than that.
   * Without oneDNN every row is an FP32 row (these 70-row steps on OpenBLAS, within 1e-4). The same
   * with the matrices 8-bit ({@code --quantization q8_0}): the adapters are FP32 beside them.
   */
  @ParameterizedTest
  @EnumSource(Quantization.class)
  void adapterAndBaseChunksOnBothPathsOfABf16Step(Quantization q, @TempDir Path tmp)
      throws Exception {
    ModelConfig c = TinyModels.llama(97, 64, 2, 4, 2, 128);
    Path dir =
        TinyModels.write(tmp.resolve("m"), c, TinyModels.randomWeights(c, 5), DType.F32, false);
    LoraAdapter ad =
        randomAdapter(
            c,
            7,
            "self_attn.q_proj",
            "self_attn.k_proj",
            "self_attn.v_proj",
            "self_attn.o_proj",
            "mlp.gate_proj",
            "mlp.up_proj",
            "mlp.down_proj");
    Random r = new Random(8);
    int[] prompt = new int[10], other = new int[60];
    for (int i = 0; i < prompt.length; i++) prompt[i] = 3 + r.nextInt(90);
    for (int i = 0; i < other.length; i++) other[i] = 3 + r.nextInt(90);
    boolean split = Bf16Gemm.available();
    // oneDNN's BF16-rounded activations: measured up to 1.3e-2 on these logits (|z| up to ~3)
    double near = split ? 3e-2 : 1e-4;
    try (ModelRunner m = ModelRunners.open(dir, "bfloat16", q, 96, 4)) {
      m.registerAdapter(1, ad);
      // alone, as generated rows (up to 64: the kernels)
      float[][] adAlone = m.forward(List.of(chunk(prompt, 0, true, 1, false))).get(0);
      float[][] baseAlone = m.forward(List.of(chunk(prompt, 4, true, 0, false))).get(0);
      float[] otherAlone = m.forward(List.of(chunk(other, 8, false, 0, false))).get(0)[0];
      float[] otherAd = m.forward(List.of(chunk(other, 68, false, 1, false))).get(0)[0];
      // both chunks prompt rows: every row on oneDNN, with the adapter
      List<float[][]> prompts =
          m.forward(List.of(chunk(prompt, 24, true, 1, true), chunk(other, 28, false, 1, true)));
      // a base prompt on oneDNN beside an adapter's generated rows on the kernels
      List<float[][]> mixed =
          m.forward(List.of(chunk(prompt, 44, true, 0, true), chunk(other, 48, false, 1, false)));
      // an adapter's generated rows on the kernels beside its prompt rows on oneDNN
      List<float[][]> both =
          m.forward(List.of(chunk(prompt, 24, true, 1, false), chunk(other, 28, false, 1, true)));
      for (int t = 0; t < prompt.length; t++) {
        assertTrue(maxDiff(adAlone[t], baseAlone[t]) > 0.5, "the adapter must change row " + t);
        assertTrue(maxDiff(prompts.get(0)[t], adAlone[t]) < near, "adapter prompt row " + t);
        assertTrue(maxDiff(mixed.get(0)[t], baseAlone[t]) < near, "base prompt row " + t);
        if (split) assertArrayEquals(adAlone[t], both.get(0)[t], "adapter generated row " + t);
        else assertTrue(maxDiff(both.get(0)[t], adAlone[t]) < near, "adapter row " + t);
      }
      assertTrue(maxDiff(prompts.get(1)[0], otherAd) < near, "second adapter prompt");
      if (split) assertArrayEquals(otherAd, mixed.get(1)[0], "generated rows beside a prompt");
      else assertTrue(maxDiff(mixed.get(1)[0], otherAd) < near, "adapter chunk beside a base one");
      assertTrue(maxDiff(both.get(1)[0], otherAd) < near, "adapter prompt beside generated rows");
      assertTrue(maxDiff(otherAd, otherAlone) > 0.5, "the adapter must change the long chunk");
    }
  }

  /**
   * A chunk from position 0 on the 20 blocks of 4 from {@code block0} (80 positions), all prompt
   * tokens or all generated ones.
   */
  private static SequenceChunk chunk(
      int[] tokens, int block0, boolean all, int adapter, boolean prompt) {
    int[] table = new int[20];
    for (int i = 0; i < table.length; i++) table[i] = block0 + i;
    return new SequenceChunk(tokens, 0, table, all, adapter, prompt ? tokens.length : 0);
  }
}
