package dev.troupe.engine.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.engine.DeviceSampling;
import dev.troupe.engine.DeviceSampling.Params;
import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.ModelRunner.SequenceChunk;
import dev.troupe.engine.testing.MapWeights;
import dev.troupe.engine.testing.TinyModels;
import dev.troupe.engine.testing.TinyModels.Arch;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Decode steps replayed from CUDA graphs against the same steps run eagerly ({@code
 * --enforce-eager}), on two runners over the same weights: batch sizes that need padding and some
 * that do not, changing from step to step, rows with and without a LoRA adapter, greedy and seeded
 * device sampling with logprobs and a repetition penalty, host logits beside sampled rows, a mixed
 * step (eager in both), and a work-buffer growth in between, after which the graphs must be
 * captured again (a graph kept past it would read freed buffers: the emulator refuses that).
 *
 * <p>On the emulator the two are equal bit for bit (each product cell and kernel row is computed
 * the same way whatever the batch). On a GPU cuBLAS may choose another algorithm for the padded row
 * count, so logits are compared within 2e-3 (CudaModelRunnerTest's bound for batched against
 * unbatched) and sampled rows by their logprob within 1e-2.
 */
class CudaGraphsTest {
  static final int BS = 4, BLOCKS = 80, SEQS = 9, TABLE = 7;

  static List<Arguments> cases() {
    List<Arguments> out = new ArrayList<>();
    for (GpuBackends b : GpuBackends.selected())
      for (Arch a : List.of(Arch.QWEN3, Arch.LLAMA)) out.add(Arguments.of(b, a));
    return out;
  }

  private record Pair(CudaModelRunner eager, CudaModelRunner graphs) implements AutoCloseable {
    @Override
    public void close() {
      try (eager) {
        graphs.close();
      }
    }
  }

  private static Pair pair(GpuBackends b, ModelConfig c, Map<String, float[]> w) {
    CudaModelRunner eager =
        CudaModelRunner.load(b.open(c, BS), c, new MapWeights(c, w), BS, BLOCKS, 0, 16, false);
    try {
      CudaModelRunner graphs =
          CudaModelRunner.load(b.open(c, BS), c, new MapWeights(c, w), BS, BLOCKS, 0, 16, true);
      for (CudaModelRunner r : List.of(eager, graphs)) {
        r.samplerThreads(64);
        r.registerAdapter(
            1, CudaModelRunnerTest.adapter(c, 2, 4.0, 7, "self_attn.q_proj", "mlp.down_proj"));
      }
      return new Pair(eager, graphs);
    } catch (RuntimeException e) {
      eager.close();
      throw e;
    }
  }

  @ParameterizedTest
  @MethodSource("cases")
  void replayedDecodeStepsEqualEagerOnes(GpuBackends b, Arch arch) {
    ModelConfig c = TinyModels.config(arch);
    Map<String, float[]> w = CudaModelRunnerTest.bf16Weights(c, 31 + arch.ordinal());
    boolean exact = b == GpuBackends.EMULATED;
    Random rnd = new Random(3);
    try (Pair p = pair(b, c, w)) {
      int[][] tables = new int[SEQS][];
      int[] pos = new int[SEQS], last = new int[SEQS];
      List<SequenceChunk> prefill = new ArrayList<>();
      for (int s = 0; s < SEQS; s++) {
        tables[s] = CudaModelRunnerTest.range(s * TABLE, TABLE);
        int[] prompt = CudaModelRunnerTest.tokens(rnd, 3, c.vocabSize());
        prefill.add(new SequenceChunk(prompt, 0, tables[s], false, s == 2 ? 1 : 0));
        pos[s] = 3;
        last[s] = prompt[2];
      }
      for (CudaModelRunner r : List.of(p.eager(), p.graphs())) r.forward(prefill);
      // sizes 1, 2 and 8 fill their graphs; 3, 5 and 9 are padded (to 4, 8 and 16); 3 and 5 come
      // back; 1 and 2 have no adapter row, the others have sequence 2's
      int[] sizes = {1, 3, 3, 5, 2, 8, 9, 1, 5};
      int decodeSteps = 0;
      for (int step = 0; step < sizes.length; step++) {
        if (step == 7) {
          // a prefill of 40 tokens grows the work buffers (sized for 16): the graphs must go
          int[] t = CudaModelRunnerTest.tokens(rnd, 40, c.vocabSize());
          int[] table = CudaModelRunnerTest.range(SEQS * TABLE, 10);
          for (CudaModelRunner r : List.of(p.eager(), p.graphs()))
            r.forward(List.of(new SequenceChunk(t, 0, table, false)));
        }
        step(p, c, sizes[step], step, tables, pos, last, exact);
        decodeSteps++;
      }
      long[] counts = p.graphs().graphCounts();
      // keys: (1, base), (4, adapters), (8, adapters), (2, base), (16, adapters); then after the
      // growth (1, base) and (8, adapters) again
      assertEquals(7, counts[0], "graphs captured");
      assertEquals(decodeSteps, counts[1], "decode steps run as graphs");
      assertEquals(0, p.eager().graphCounts()[1], "the eager runner launched a graph");

      // a mixed step (a prefill chunk beside decode rows) runs eagerly on both
      List<SequenceChunk> mixed = new ArrayList<>();
      mixed.add(new SequenceChunk(new int[] {last[0]}, pos[0], tables[0], false));
      mixed.add(new SequenceChunk(new int[] {1, 2}, pos[1], tables[1], false));
      float[][] e = p.eager().forward(mixed).get(1), g = p.graphs().forward(mixed).get(1);
      assertArrayEquals(e[0], g[0], "mixed step");
      assertEquals(counts[1], p.graphs().graphCounts()[1], "a mixed step launched a graph");
    }
  }

  /** One decode step of the first {@code n} sequences on both runners, compared. */
  private static void step(
      Pair p,
      ModelConfig c,
      int n,
      int step,
      int[][] tables,
      int[] pos,
      int[] last,
      boolean exact) {
    List<SequenceChunk> batch = new ArrayList<>();
    List<DeviceSampling.Row> rows = new ArrayList<>();
    boolean[] host = new boolean[n];
    Random u = new Random(100 + step);
    for (int s = 0; s < n; s++) {
      batch.add(new SequenceChunk(new int[] {last[s]}, pos[s], tables[s], false, s == 2 ? 1 : 0));
      host[s] = s % 2 == 0;
      boolean greedy = s % 3 == 0;
      int[] none = {};
      int[] seen = {last[s], (last[s] + 1) % c.vocabSize()};
      rows.add(
          new DeviceSampling.Row(
              s,
              new Params(
                  greedy,
                  0.8f,
                  5,
                  0.9f,
                  0f,
                  u.nextDouble(),
                  3,
                  none,
                  none,
                  none,
                  new float[0],
                  s % 2 == 1 ? 1.3f : 1f,
                  s % 2 == 1 ? seen : none,
                  0f,
                  0f,
                  none,
                  none)));
    }
    // rows in another order than the chunks, as the engine may give them
    java.util.Collections.reverse(rows);
    DeviceSampling.Step e = p.eager().forwardSample(batch, host, rows);
    DeviceSampling.Step g = p.graphs().forwardSample(batch, host, rows);
    String what = "step " + step + " (batch " + n + ")";
    for (int s = 0; s < n; s++) {
      if (!host[s]) {
        assertEquals(null, g.logits().get(s), what);
        continue;
      }
      float[] el = e.logits().get(s)[0], gl = g.logits().get(s)[0];
      if (exact) assertArrayEquals(el, gl, what + " logits of sequence " + s);
      else CudaModelRunnerTest.close(new float[][] {gl}, new float[][] {el}, 2e-3, what);
    }
    for (int r = 0; r < rows.size(); r++) {
      DeviceSampling.Result er = e.samples().get(r), gr = g.samples().get(r);
      String row = what + " row " + r;
      if (exact) {
        assertEquals(er.token(), gr.token(), row);
        assertEquals(Float.floatToIntBits(er.logprob()), Float.floatToIntBits(gr.logprob()), row);
        assertEquals(er.rank(), gr.rank(), row);
        assertArrayEquals(er.topIds(), gr.topIds(), row);
        assertArrayEquals(er.topLogprobs(), gr.topLogprobs(), row);
      } else {
        assertTrue(Math.abs(er.logprob() - gr.logprob()) <= 1e-2 || er.token() != gr.token(), row);
      }
    }
    for (int r = 0; r < rows.size(); r++) {
      int s = rows.get(r).chunk();
      last[s] = e.samples().get(r).token();
      pos[s]++;
    }
  }

  /**
   * A device that refuses the capture (as a driver or cuBLAS without graph support would): the step
   * runs eagerly with the same result, and graphs stay off for the runner.
   */
  static List<GpuBackends> backends() {
    return GpuBackends.selected();
  }

  @ParameterizedTest
  @MethodSource("backends")
  void aRefusedCaptureFallsBackToEagerSteps(GpuBackends b) {
    ModelConfig c = TinyModels.config(Arch.QWEN3);
    Map<String, float[]> w = CudaModelRunnerTest.bf16Weights(c, 5);
    int[] begun = {0};
    Gpu inner = b.open(c, BS);
    Gpu refusing =
        (Gpu)
            java.lang.reflect.Proxy.newProxyInstance(
                Gpu.class.getClassLoader(),
                new Class<?>[] {Gpu.class},
                (proxy, method, args) -> {
                  try {
                    Object r = method.invoke(inner, args);
                    if (method.getName().equals("beginCapture")) begun[0]++;
                    if (method.getName().equals("endCapture"))
                      throw new CudaException("cuStreamEndCapture failed: refused here");
                    return r;
                  } catch (java.lang.reflect.InvocationTargetException e) {
                    throw e.getCause();
                  }
                });
    try (CudaModelRunner g =
            CudaModelRunner.load(refusing, c, new MapWeights(c, w), BS, BLOCKS, 0, 16, true);
        CudaModelRunner e =
            CudaModelRunner.load(
                b.open(c, BS), c, new MapWeights(c, w), BS, BLOCKS, 0, 16, false)) {
      for (int step = 0; step < 3; step++) {
        List<SequenceChunk> batch =
            List.of(
                new SequenceChunk(new int[] {3 + step}, step, new int[] {0}, false),
                new SequenceChunk(new int[] {5 + step}, step, new int[] {1}, false));
        List<float[][]> got = g.forward(batch), want = e.forward(batch);
        for (int s = 0; s < 2; s++)
          if (b == GpuBackends.EMULATED) assertArrayEquals(want.get(s)[0], got.get(s)[0]);
          else
            CudaModelRunnerTest.close(
                new float[][] {got.get(s)[0]},
                new float[][] {want.get(s)[0]},
                2e-3,
                "step " + step);
      }
      assertEquals(1, begun[0], "one capture tried");
      assertEquals(0, g.graphCounts()[0]);
    }
  }

  @Test
  void captureSizesAreVllmsOnesUpTo256() {
    int[][] cases = {
      {1, 1},
      {2, 2},
      {3, 4},
      {4, 4},
      {5, 8},
      {8, 8},
      {9, 16},
      {16, 16},
      {17, 24},
      {250, 256},
      {256, 256},
      {257, -1},
      {0, -1}
    };
    for (int[] k : cases) assertEquals(k[1], DecodeGraphs.sizeFor(k[0]), "batch " + k[0]);
  }
}
