package dev.troupe.engine.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.testing.MapWeights;
import dev.troupe.engine.testing.TinyModels;
import dev.troupe.protocol.cluster.TrainingConfig;
import dev.troupe.training.AdamW;
import dev.troupe.training.RlLoss;
import dev.troupe.training.nd4j.LoraSpec;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The device's loss ({@code rl_loss}) against {@link RlLoss} and its optimizer ({@code adamw_step})
 * against {@link AdamW} on the same inputs, every experimental_config combination: the loss kernel
 * repeats RlLoss's arithmetic in FP64 (sums in another order: ≤ 1e-12 relative), its gradient comes
 * back as FP32 (≤ 1e-6 relative); the optimizer keeps FP32 moments where AdamW keeps FP64 (≤ 1e-5
 * relative on the parameters' change over three steps).
 */
class CudaTrainerLossTest {
  // RlLossTest's row: 5 targets, two histories (7, 9); target 2 untrained; target 4 no old logprob
  static final float[] NEW = {-1.0f, -0.5f, -2.0f, -0.2f, -1.5f};
  static final double[] OLD = {-1.2, -0.3, -2.5, -0.9, Double.NaN};
  static final double[] ADV = {1.5, 1.5, 1.5, -0.8, -0.8};
  static final double[] W = {0.5, 0.5, 0.5, 1.0, 1.0};
  static final boolean[] MASK = {true, true, false, true, true};
  static final int[] HIST = {7, 7, 7, 9, 9};
  static final float[] ENT = {2.0f, 1.5f, 0.7f, 3.25f, 0.5f};

  /** Every combination RlLossTest checks, and more: both objectives over all the modifiers. */
  static List<TrainingConfig> configs() {
    List<TrainingConfig> out = new ArrayList<>();
    for (boolean ppo : new boolean[] {true, false})
      for (String level : new String[] {"token", "sequence", "average", "geometric_average"})
        for (Boolean mask : new Boolean[] {null, true})
          for (Double cap : new Double[] {null, 1.1, 1.5})
            for (Double tau : new Double[] {null, 0.5})
              for (double[] eps : new double[][] {{0.2, 0.2}, {0.3, 0.6}, {10, 10}})
                out.add(
                    TrainingConfig.resolve(
                        null, eps[0], eps[1], level, tau, null, mask, cap, ppo, null, null));
    out.add(TrainingConfig.defaults());
    out.add(
        TrainingConfig.resolve(null, 0.2, 0.5, "token", null, null, null, null, false, null, null));
    return out;
  }

  static CudaTrainer trainer(GpuBackends b) {
    ModelConfig c = TinyModels.config(TinyModels.Arch.LLAMA);
    Map<String, float[]> w = TinyModels.randomWeights(c, 1);
    LoraSpec s = new LoraSpec(2, 4, List.of("q_proj", "down_proj"), false, 3);
    // (no reference to CudaTrainerTest: this class runs in the GPU bundle, which has no ND4J)
    return CudaTrainer.load(
        b.open(c, 16),
        c,
        new MapWeights(c, w),
        new CudaTrainer.Adapter(s.rank(), s.alpha(), s.targets()),
        8);
  }

  @ParameterizedTest
  @MethodSource("dev.troupe.engine.cuda.GpuBackends#selected")
  void lossAndItsGradientEqualRlLossForEveryConfig(GpuBackends b) {
    double[] newLp = new double[NEW.length];
    for (int i = 0; i < NEW.length; i++) newLp[i] = NEW[i];
    double worstLoss = 0, worstGrad = 0;
    try (CudaTrainer t = trainer(b)) {
      List<TrainingConfig> configs = configs();
      for (TrainingConfig cfg : configs) {
        RlLoss.Result ref = RlLoss.compute(cfg, newLp, OLD, ADV, W, MASK, HIST);
        double[] g = new double[NEW.length];
        double[] got =
            t.lossOnly(NEW, ENT, new CudaTrainer.Targets(MASK, OLD, ADV, W, HIST), cfg, g);
        double le = Math.abs(got[0] - ref.loss()) / Math.max(1e-12, Math.abs(ref.loss()));
        worstLoss = Math.max(worstLoss, le);
        assertTrue(
            le <= 1e-12 || Math.abs(got[0] - ref.loss()) < 1e-15,
            cfg + ": loss " + got[0] + " vs " + ref.loss());
        for (int i = 0; i < g.length; i++) {
          double ge = Math.abs(g[i] - ref.gradient()[i]);
          worstGrad = Math.max(worstGrad, ge / Math.max(1e-30, Math.abs(ref.gradient()[i])));
          assertEquals(
              ref.gradient()[i], g[i], 1e-6 * Math.abs(ref.gradient()[i]) + 1e-12, cfg + " t=" + i);
        }
        // ART's logged entropy: Σ H·w over trained targets / their count
        assertEquals((2.0 * 0.5 + 1.5 * 0.5 + 3.25 + 0.5) / 4, got[1], 1e-12);
      }
      System.out.printf(
          "[%s] rl_loss vs RlLoss over %d configs: loss %.1e, gradient %.1e (relative)%n",
          b, configs.size(), worstLoss, worstGrad);
    }
  }

  @ParameterizedTest
  @MethodSource("dev.troupe.engine.cuda.GpuBackends#selected")
  void adamwEqualsTheHostOptimizerWithAndWithoutClipping(GpuBackends b) {
    try (CudaTrainer t = trainer(b)) {
      Random r = new Random(11);
      Map<String, double[]> params = new LinkedHashMap<>();
      t.shapes().forEach((k, v) -> params.put(k, gaussian(r, (int) (v[0] * v[1]), 0.2)));
      for (double maxNorm : new double[] {0.1, 0}) {
        AdamW.Hyper hyper = new AdamW.Hyper(0.9, 0.99, 1e-8, 0.1, maxNorm);
        AdamW host = new AdamW(hyper);
        Map<String, double[]> hostParams = new LinkedHashMap<>();
        params.forEach((k, v) -> hostParams.put(k, v.clone()));
        t.parameters(params);
        Map<String, double[]> zero = new LinkedHashMap<>();
        params.forEach((k, v) -> zero.put(k, new double[v.length]));
        t.optimizerState(new CudaTrainer.OptimizerState(0, zero, zero));
        CudaTrainer.Adam adam = new CudaTrainer.Adam(0.9, 0.99, 1e-8, 0.1, maxNorm);
        for (int step = 0; step < 3; step++) {
          Map<String, double[]> grads = new LinkedHashMap<>();
          params.forEach((k, v) -> grads.put(k, gaussian(r, v.length, 0.05)));
          double hostNorm = host.update(hostParams, grads, 1e-2, Set.of());
          double devNorm = t.optimizerStep(grads, adam, 1e-2);
          assertEquals(hostNorm, devNorm, 1e-6 * hostNorm, "gradient norm");
        }
        Map<String, double[]> got = t.parameters();
        for (String k : params.keySet()) {
          double[] p0 = params.get(k), want = hostParams.get(k), have = got.get(k);
          for (int i = 0; i < p0.length; i++)
            assertEquals(
                want[i] - p0[i],
                have[i] - p0[i],
                1e-5 * Math.abs(want[i] - p0[i]) + 2e-7,
                k + "[" + i + "] max norm " + maxNorm);
        }
        assertEquals(3, t.optimizerState().step());
      }
    }
  }

  static double[] gaussian(Random r, int n, double std) {
    double[] d = new double[n];
    for (int i = 0; i < n; i++) d[i] = std * r.nextGaussian();
    return d;
  }
}
