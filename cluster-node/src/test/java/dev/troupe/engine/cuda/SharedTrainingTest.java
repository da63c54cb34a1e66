package dev.troupe.engine.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.ModelRunner.SequenceChunk;
import dev.troupe.engine.testing.MapWeights;
import dev.troupe.engine.testing.TinyModels;
import dev.troupe.engine.testing.TinyModels.Arch;
import dev.troupe.protocol.cluster.TrainingConfig;
import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Training on a serving runner's weights (ART's shared mode, docs/training.md "Sharing the GPU
 * between serving and training"), without the CPU trainer (ND4J), so that the GPU run's bundle
 * ({@code bench/gpu/run.sh}) runs it on the device too: the trainer adds no second copy of the
 * model and computes what a trainer of its own computes; its optimizer steps leave the base model's
 * logits as they were; the adapter it hands over in memory is served with the trained parameters.
 */
class SharedTrainingTest {
  static final ModelConfig C = TinyModels.config(Arch.QWEN3);

  /** Every LoRA parameter drawn N(0, 0.3²) (B = 0 would hide A's gradient). */
  static Map<String, double[]> randomParameters(Map<String, long[]> shapes, long seed) {
    Random r = new Random(seed);
    Map<String, double[]> p = new HashMap<>();
    for (Map.Entry<String, long[]> e : shapes.entrySet()) {
      long n = 1;
      for (long d : e.getValue()) n *= d;
      double[] v = new double[(int) n];
      for (int i = 0; i < v.length; i++) v[i] = 0.3 * r.nextGaussian();
      p.put(e.getKey(), v);
    }
    return p;
  }

  /** {@code gpu}, counting the bytes uploaded to it. */
  static final class Counting extends ForwardingGpu {
    long uploaded;

    Counting(Gpu gpu) {
      super(gpu);
    }

    @Override
    public void upload(long dst, ByteBuffer src) {
      uploaded += src.remaining();
      super.upload(dst, src);
    }
  }

  /** Log-probabilities of {@code seq[t + 1]} after {@code seq[0 ..= t]}, served with adapter id. */
  static double[] served(CudaModelRunner run, int[] seq, int adapter) {
    float[][] logits =
        run.forward(List.of(new SequenceChunk(seq, 0, new int[] {0, 1, 2, 3}, true, adapter)))
            .get(0);
    double[] lp = new double[seq.length - 1];
    for (int t = 0; t + 1 < seq.length; t++) {
      double max = Double.NEGATIVE_INFINITY, sum = 0;
      for (float z : logits[t]) max = Math.max(max, z);
      for (float z : logits[t]) sum += Math.exp(z - max);
      lp[t] = logits[t][seq[t + 1]] - max - Math.log(sum);
    }
    return lp;
  }

  @ParameterizedTest
  @MethodSource("dev.troupe.engine.cuda.GpuBackends#selected")
  void aTrainerOnAServingRunnerUsesItsWeightsAndItsAdapterIsServedInMemory(GpuBackends b) {
    Map<String, float[]> w = CudaModelRunnerTest.bf16Weights(C, 41);
    double[] coef = CudaTrainerTest.coefficients(9);
    int[] tokens = CudaTrainerTest.TOKENS, positions = CudaTrainerTest.POSITIONS;
    int[] segments = CudaTrainerTest.SEGMENTS;
    CudaTrainer.Gradients alone;
    Map<String, double[]> start;
    try (CudaTrainer t = CudaTrainerTest.trainer(b, C, w, CudaTrainerTest.SPEC)) {
      start = randomParameters(t.shapes(), 8);
      t.parameters(start);
      alone = t.gradients(tokens, positions, segments, null, coef);
    }
    Counting gpu = new Counting(b.open(C, 4));
    try (CudaModelRunner run = CudaModelRunner.load(gpu, C, new MapWeights(C, w), 4, 16, 0, 16)) {
      long loading = gpu.uploaded;
      int[] seq = java.util.Arrays.copyOf(tokens, 7);
      double[] baseBefore = served(run, seq, 0);
      try (CudaTrainer t = run.trainer(CudaTrainerTest.adapter(CudaTrainerTest.SPEC), 16)) {
        // no second copy of the model: the trainer uploads its RoPE tables only
        assertTrue(
            gpu.uploaded - loading < loading / 2,
            "the trainer uploaded " + (gpu.uploaded - loading) + " bytes; loading took " + loading);
        t.parameters(start);
        CudaTrainer.Gradients shared = t.gradients(tokens, positions, segments, null, coef);
        // the same weights, the same kernels: the same numbers as a trainer of its own
        for (int i = 0; i < tokens.length; i++)
          assertEquals(alone.logprobs()[i], shared.logprobs()[i], 1e-6, "t=" + i);
        for (String name : alone.gradients().keySet())
          assertTrue(
              CudaTrainerTest.relErr(shared.gradients().get(name), alone.gradients().get(name))
                  <= 1e-6,
              name);
        // three optimizer steps of ART's default loss: the adapter moves, the base weights do not
        boolean[] mask = new boolean[tokens.length];
        double[] old = new double[tokens.length], adv = new double[tokens.length];
        double[] weights = new double[tokens.length];
        int[] history = new int[tokens.length];
        for (int i = 0; i < tokens.length; i++) {
          mask[i] = i + 1 < tokens.length && segments[i] == segments[i + 1];
          old[i] = Double.NaN;
          adv[i] = segments[i] == 0 ? 1 : -1;
          weights[i] = 1;
          history[i] = segments[i];
        }
        for (int step = 0; step < 3; step++)
          t.step(
              tokens,
              positions,
              segments,
              new CudaTrainer.Targets(mask, old, adv, weights, history),
              TrainingConfig.defaults(),
              new CudaTrainer.Adam(0.9, 0.99, 1e-8, 0.1, 1.0),
              1e-2);
        double[] trained =
            t.score(seq, new int[] {0, 1, 2, 3, 4, 5, 6}, new int[7], null).logprobs();
        // served in memory, beside the base model, in the same process
        run.registerAdapter(1, t.adapter(1));
        double[] withAdapter = served(run, seq, 1);
        double moved = 0;
        for (int i = 0; i + 1 < seq.length; i++) {
          assertEquals(trained[i], withAdapter[i], 2e-2, "served with the trained adapter, t=" + i);
          moved = Math.max(moved, Math.abs(withAdapter[i] - baseBefore[i]));
        }
        assertTrue(moved > 1e-3, "the trained adapter changed nothing: " + moved);
      }
      assertArrayEquals(baseBefore, served(run, seq, 0), 1e-6, "the base model after training");
    }
  }
}
