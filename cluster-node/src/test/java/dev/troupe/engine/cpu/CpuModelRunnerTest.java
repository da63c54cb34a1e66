package dev.troupe.engine.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.ModelRunner;
import dev.troupe.engine.ModelRunner.SequenceChunk;
import dev.troupe.engine.model.DType;
import dev.troupe.engine.model.ModelConfigs;
import dev.troupe.engine.model.RoundedWeights;
import dev.troupe.engine.model.SafetensorsWeights;
import dev.troupe.engine.model.ServedDType;
import dev.troupe.engine.model.WeightSource;
import dev.troupe.engine.runner.ModelRunners;
import dev.troupe.engine.testing.ScalarReferenceModel;
import dev.troupe.engine.testing.TinyModels;
import dev.troupe.engine.testing.TinyModels.Arch;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/** The ND4J forward against the scalar reference, for every architecture and batch shape. */
class CpuModelRunnerTest {
  static final double TOL = 1e-4;
  static final int BS = 4;

  @TempDir Path tmp;

  private static DType dtypeFor(Arch a) {
    return switch (a) {
      case LLAMA, MISTRAL -> DType.F32;
      case LLAMA3_SCALED, QWEN3 -> DType.BF16;
      case QWEN2 -> DType.F16;
    };
  }

  private static int[] randomTokens(Random r, int n, int vocab) {
    int[] t = new int[n];
    for (int i = 0; i < n; i++) t[i] = r.nextInt(vocab);
    return t;
  }

  static float maxDiff(float[] a, float[] b) {
    assertEquals(a.length, b.length);
    float m = 0;
    for (int i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
    return m;
  }

  private static int[] blocks(int... ids) {
    return ids;
  }

  /** Every architecture (each stored in F32, BF16 or F16) served in every dtype. */
  static Stream<Arguments> archAndServedDtype() {
    return Arrays.stream(Arch.values())
        .flatMap(
            a -> Stream.of("auto", "float32", "bfloat16", "float16").map(d -> Arguments.of(a, d)));
  }

  /**
   * The reference runs in double precision on the weights as served (16-bit values widened
   * exactly), so the runner's only difference is FP32 arithmetic in another order: |Δlogit| of
   * these tiny models (logits ~1, sums of ≤ 64 terms) stays near 1e-6; 1e-4 leaves room for the
   * attention's longer sums and softmax without hiding a wrong weight (which moves logits by 1e-2
   * or more).
   */
  @ParameterizedTest
  @MethodSource("archAndServedDtype")
  void matchesScalarReferenceForSingleSequencesChunksAndMixedBatches(Arch arch, String dtype)
      throws Exception {
    Path dir =
        TinyModels.write(
            tmp.resolve(arch.name()),
            arch,
            dtypeFor(arch),
            42 + arch.ordinal(),
            arch == Arch.QWEN3);
    Random r = new Random(7);
    int[] a = randomTokens(r, 23, 97), b = randomTokens(r, 9, 97), c = randomTokens(r, 14, 97);
    float[][] refA, refB, refC;
    DType served;
    try (WeightSource w = SafetensorsWeights.open(dir)) {
      served = ServedDType.resolve(dtype, ModelConfigs.torchDType(dir), w);
      ScalarReferenceModel ref =
          new ScalarReferenceModel(ModelConfigs.read(dir), RoundedWeights.of(w, served));
      refA = ref.logits(a);
      refB = ref.logits(b);
      refC = ref.logits(c);
    }
    try (ModelRunner m = ModelRunners.open(dir, dtype, 32, BS)) {
      assertEquals(served, ((CpuModelRunner) m).dtype());
      // 1. a whole prompt in one chunk, all logits, blocks out of order
      int[] tableA = blocks(9, 3, 17, 0, 5, 30);
      float[][] all = m.forward(List.of(new SequenceChunk(a, 0, tableA, true))).get(0);
      for (int t = 0; t < a.length; t++)
        assertTrue(
            maxDiff(all[t], refA[t]) < TOL,
            arch + " single sequence, position " + t + ": " + maxDiff(all[t], refA[t]));

      // 2. the same prompt as chunked prefill (7 tokens: per-token attention; 9 tokens after a
      // cached prefix: GEMM attention) then decode steps, in other blocks
      int[] tableA2 = blocks(1, 2, 4, 6, 7, 8);
      float[][] l =
          m.forward(
                  List.of(
                      new SequenceChunk(java.util.Arrays.copyOfRange(a, 0, 7), 0, tableA2, false)))
              .get(0);
      assertTrue(maxDiff(l[0], refA[6]) < TOL);
      l =
          m.forward(
                  List.of(
                      new SequenceChunk(java.util.Arrays.copyOfRange(a, 7, 16), 7, tableA2, true)))
              .get(0);
      for (int i = 0; i < 9; i++)
        assertTrue(maxDiff(l[i], refA[7 + i]) < TOL, arch + " chunked prefill " + i);
      for (int t = 16; t < a.length; t++) {
        l = m.forward(List.of(new SequenceChunk(new int[] {a[t]}, t, tableA2, false))).get(0);
        assertTrue(
            maxDiff(l[0], refA[t]) < TOL, arch + " decode at " + t + ": " + maxDiff(l[0], refA[t]));
      }

      // 3. mixed batch: b prefilling 6 tokens, c prefilling all, a decoding (cache from step 2)
      int[] tableB = blocks(10, 11, 12), tableC = blocks(13, 14, 15, 16);
      m.forward(
          List.of(new SequenceChunk(java.util.Arrays.copyOfRange(b, 0, 3), 0, tableB, false)));
      List<float[][]> mixed =
          m.forward(
              List.of(
                  new SequenceChunk(java.util.Arrays.copyOfRange(b, 3, 9), 3, tableB, true),
                  new SequenceChunk(new int[] {a[a.length - 1]}, a.length - 1, tableA2, false),
                  new SequenceChunk(c, 0, tableC, false)));
      for (int i = 0; i < 6; i++)
        assertTrue(maxDiff(mixed.get(0)[i], refB[3 + i]) < TOL, arch + " mixed b " + i);
      assertTrue(maxDiff(mixed.get(1)[0], refA[a.length - 1]) < TOL, arch + " mixed a");
      assertEquals(1, mixed.get(2).length);
      assertTrue(maxDiff(mixed.get(2)[0], refC[c.length - 1]) < TOL, arch + " mixed c");
    }
  }

  @Test
  void mistralSlidingWindowLimitsAttention() throws Exception {
    ModelConfig c = TinyModels.withSlidingWindow(TinyModels.config(Arch.MISTRAL), 6);
    Path dir =
        TinyModels.write(tmp.resolve("w"), c, TinyModels.randomWeights(c, 12), DType.F32, false);
    assertEquals(6, ModelConfigs.read(dir).slidingWindow());
    int[] a = randomTokens(new Random(4), 20, 97);
    float[][] ref, full;
    try (WeightSource w = SafetensorsWeights.open(dir)) {
      ref = new ScalarReferenceModel(c, w).logits(a);
      full = new ScalarReferenceModel(TinyModels.config(Arch.MISTRAL), w).logits(a);
    }
    assertTrue(maxDiff(ref[19], full[19]) > 1e-3, "the window must matter at position 19");
    try (ModelRunner m = ModelRunners.open(dir, "float32", 16, BS)) {
      int[] table = {4, 0, 9, 2, 7};
      // GEMM path (12-token chunk), then per-token path (decode)
      float[][] l =
          m.forward(List.of(new SequenceChunk(java.util.Arrays.copyOf(a, 12), 0, table, true)))
              .get(0);
      for (int t = 0; t < 12; t++) assertTrue(maxDiff(l[t], ref[t]) < TOL, "prefill " + t);
      for (int t = 12; t < a.length; t++) {
        float[] d =
            m.forward(List.of(new SequenceChunk(new int[] {a[t]}, t, table, false))).get(0)[0];
        assertTrue(maxDiff(d, ref[t]) < TOL, "decode " + t);
      }
    }
  }

  /**
   * A sequence gets the same logits alone and in a batch: bit for bit on the kernel path (decode
   * steps and chunks of up to 64 rows run the same kernel in the same order whatever the batch),
   * within 1e-4 where batching moves a prefill onto the BLAS path (more than 64 rows). These chunks
   * count as generated rows, which never go to oneDNN ({@code Bf16RowPathTest}, {@code
   * LoraServingTest} and {@code Bf16GemmTest} cover prompt rows).
   */
  @ParameterizedTest
  @ValueSource(strings = {"float32", "bfloat16", "float16"})
  void batchedEqualsUnbatched(String dtype) throws Exception {
    Path dir = TinyModels.write(tmp.resolve("m"), Arch.QWEN3, DType.F32, 5, false);
    Random r = new Random(11);
    int n = 6;
    int[][] prompts = new int[n][];
    for (int i = 0; i < n; i++) prompts[i] = randomTokens(r, 3 + 2 * i, 97);
    int[] longPrompt = randomTokens(r, 70, 97); // a 70-row step: BLAS
    try (ModelRunner m = ModelRunners.open(dir, dtype, 96, BS)) {
      List<float[]> alone = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        int[] table = {i * 4, i * 4 + 1, i * 4 + 2, i * 4 + 3};
        alone.add(m.forward(List.of(new SequenceChunk(prompts[i], 0, table, false))).get(0)[0]);
        alone.add(
            m.forward(List.of(new SequenceChunk(new int[] {i}, prompts[i].length, table, false)))
                .get(0)[0]);
      }
      int[] longTable = new int[20];
      for (int i = 0; i < 20; i++) longTable[i] = 70 + i;
      float[] longAlone =
          m.forward(List.of(new SequenceChunk(longPrompt, 0, longTable, false))).get(0)[0];
      List<SequenceChunk> prefill = new ArrayList<>(), decode = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        int[] table = {32 + i * 4, 33 + i * 4, 34 + i * 4, 35 + i * 4};
        prefill.add(new SequenceChunk(prompts[i], 0, table, false));
        decode.add(new SequenceChunk(new int[] {i}, prompts[i].length, table, false));
      }
      List<float[][]> p = m.forward(prefill), d = m.forward(decode);
      for (int i = 0; i < n; i++) {
        assertArrayEquals(alone.get(2 * i), p.get(i)[0], dtype + " prefill " + i);
        assertArrayEquals(alone.get(2 * i + 1), d.get(i)[0], dtype + " decode " + i);
      }
      // 48 prompt rows + a 30-token chunk of the long prompt = 78 rows: the BLAS path
      List<SequenceChunk> mixed = new ArrayList<>(prefill.subList(0, n));
      m.forward(List.of(new SequenceChunk(Arrays.copyOf(longPrompt, 40), 0, longTable, false)));
      mixed.add(new SequenceChunk(Arrays.copyOfRange(longPrompt, 40, 70), 40, longTable, false));
      List<float[][]> x = m.forward(mixed);
      double tol = 1e-4;
      for (int i = 0; i < n; i++)
        assertTrue(maxDiff(alone.get(2 * i), x.get(i)[0]) < tol, dtype + " BLAS prefill " + i);
      assertTrue(maxDiff(longAlone, x.get(n)[0]) < tol, dtype + " BLAS long chunk");
    }
  }

  @Test
  void parallelDecodeAttentionMatchesReference() throws Exception {
    Path dir = TinyModels.write(tmp.resolve("m"), Arch.MISTRAL, DType.F32, 8, false);
    Random r = new Random(3);
    int n = 5;
    int[][] seqs = new int[n][];
    for (int i = 0; i < n; i++) seqs[i] = randomTokens(r, 6 + i, 97);
    try (WeightSource w = SafetensorsWeights.open(dir);
        ModelRunner m = ModelRunners.open(dir, "float32", 16, BS)) {
      ScalarReferenceModel ref = new ScalarReferenceModel(ModelConfigs.read(dir), w);
      List<SequenceChunk> prefill = new ArrayList<>(), decode = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        int[] table = {3 * i, 3 * i + 1, 3 * i + 2};
        int len = seqs[i].length;
        prefill.add(new SequenceChunk(java.util.Arrays.copyOf(seqs[i], len - 1), 0, table, false));
        decode.add(new SequenceChunk(new int[] {seqs[i][len - 1]}, len - 1, table, false));
      }
      m.forward(prefill);
      List<float[][]> out = m.forward(decode);
      for (int i = 0; i < n; i++) {
        float[][] expected = ref.logits(seqs[i]);
        assertTrue(maxDiff(out.get(i)[0], expected[seqs[i].length - 1]) < TOL, "sequence " + i);
      }
    }
  }

  @Test
  void copyBlockCopiesCachedKeysAndValues() throws Exception {
    Path dir = TinyModels.write(tmp.resolve("m"), Arch.LLAMA, DType.F32, 3, false);
    int[] prompt = {5, 6, 7, 8, 9, 10};
    try (ModelRunner m = ModelRunners.open(dir, "float32", 8, BS)) {
      m.forward(List.of(new SequenceChunk(prompt, 0, new int[] {0, 1}, false)));
      float[] expected =
          m.forward(List.of(new SequenceChunk(new int[] {11}, 6, new int[] {0, 1}, false)))
              .get(0)[0];
      // a fork: block 0 shared, block 1 copied to 2 before the fork writes into it
      m.copyBlock(1, 2);
      float[] forked =
          m.forward(List.of(new SequenceChunk(new int[] {11}, 6, new int[] {0, 2}, false)))
              .get(0)[0];
      assertTrue(maxDiff(expected, forked) < 1e-6);
      // without the copy, block 3 holds nothing of this sequence and the logits differ
      float[] wrong =
          m.forward(List.of(new SequenceChunk(new int[] {11}, 6, new int[] {0, 3}, false)))
              .get(0)[0];
      assertTrue(maxDiff(expected, wrong) > 1e-3);
    }
  }

  @Test
  void rejectsBadChunks() throws Exception {
    Path dir = TinyModels.write(tmp.resolve("m"), Arch.LLAMA, DType.F32, 3, false);
    try (ModelRunner m = ModelRunners.open(dir, "float32", 4, BS)) {
      assertThrows(
          IllegalArgumentException.class,
          () ->
              m.forward(
                  List.of(new SequenceChunk(new int[] {1, 2, 3, 4, 5}, 0, new int[] {0}, false))));
      assertThrows(
          IllegalArgumentException.class,
          () -> m.forward(List.of(new SequenceChunk(new int[] {97}, 0, new int[] {0}, false))));
      assertThrows(
          IllegalArgumentException.class,
          () -> m.forward(List.of(new SequenceChunk(new int[] {1}, 0, new int[] {4}, false))));
      assertThrows(
          IllegalArgumentException.class,
          () -> m.forward(List.of(new SequenceChunk(new int[] {1}, 0, new int[] {0}, false, 3))));
      assertThrows(IllegalArgumentException.class, () -> m.copyBlock(0, 4));
    }
  }
}
