package dev.troupe.training;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.troupe.protocol.cluster.TrainingConfig;
import org.junit.jupiter.api.Test;

/** The loss against hand-computed values and its gradient against finite differences. */
class RlLossTest {
  private static final double NAN = Double.NaN;

  // 5 targets, two histories (ids 7 and 9); target 2 is not trainable; target 4 has no old logprob
  private static final double[] NEW = {-1.0, -0.5, -2.0, -0.2, -1.5};
  private static final double[] OLD = {-1.2, -0.3, -2.5, -0.9, NAN};
  private static final double[] ADV = {1.5, 1.5, 1.5, -0.8, -0.8};
  private static final double[] W = {0.5, 0.5, 0.5, 1.0, 1.0};
  private static final boolean[] MASK = {true, true, false, true, true};
  private static final int[] HIST = {7, 7, 7, 9, 9};
  private static final double DEN = 4 + 1e-6;

  private static TrainingConfig cfg(
      boolean ppo,
      Double eps,
      Double epsHigh,
      String level,
      Double tau,
      Boolean maskRatio,
      Double cap) {
    return TrainingConfig.resolve(
        null, eps, epsHigh, level, tau, null, maskRatio, cap, ppo, null, null);
  }

  private static RlLoss.Result run(TrainingConfig c, double[] newLp) {
    return RlLoss.compute(c, newLp, OLD, ADV, W, MASK, HIST);
  }

  @Test
  void defaultsAreArt055Cispo() {
    TrainingConfig d = TrainingConfig.defaults();
    assertEquals(false, d.ppo());
    assertEquals(1.0, d.epsilon());
    assertEquals(4.0, d.epsilonHigh());
    assertEquals(5e-6, d.learningRate());
    assertEquals(TrainingConfig.ImportanceSamplingLevel.TOKEN, d.importanceSamplingLevel());
    assertEquals(true, d.scaleRewards());
    assertEquals(0.0, d.advantageBalance());
    TrainingConfig ppo = cfg(true, null, null, null, null, null, null);
    assertEquals(0.2, ppo.epsilon());
    assertEquals(0.2, ppo.epsilonHigh());
    assertEquals(0.3, cfg(true, 0.3, null, null, null, null, null).epsilonHigh());
    assertThrows(
        IllegalArgumentException.class, () -> cfg(true, null, null, "tokens", null, null, null));
  }

  @Test
  void ppoTokenLevelByHand() {
    RlLoss.Result r = run(cfg(true, 0.2, 0.2, "token", null, null, null), NEW);
    // t0: ρ = e^0.2 = 1.2214 > 1.2, A > 0 -> min picks clip: 1.2·1.5
    // t1: ρ = e^-0.2 = 0.8187 inside -> 0.8187·1.5
    // t3: ρ = e^0.7 = 2.0138, A < 0 -> min(ρA, 1.2A) = ρA (unclipped, more negative)
    // t4: ρ = 1 -> 1·A
    double expected =
        -(1.2 * 1.5 * 0.5 + Math.exp(-0.2) * 1.5 * 0.5 + Math.exp(0.7) * -0.8 + 1 * -0.8) / DEN;
    assertEquals(expected, r.loss(), 1e-12);
    // gradients: t0 clipped -> 0; t1 -ρA·w/den; t3 -ρA·w/den; t4 -A·w/den; t2 masked -> 0
    assertEquals(0.0, r.gradient()[0], 1e-12);
    assertEquals(-Math.exp(-0.2) * 1.5 * 0.5 / DEN, r.gradient()[1], 1e-12);
    assertEquals(0.0, r.gradient()[2], 1e-12);
    assertEquals(-Math.exp(0.7) * -0.8 / DEN, r.gradient()[3], 1e-12);
    assertEquals(0.8 / DEN, r.gradient()[4], 1e-12);
  }

  @Test
  void cispoByHand() {
    RlLoss.Result r = run(cfg(false, 0.2, 0.5, "token", null, null, null), NEW);
    // clip(sg ρ) to [0.8, 1.5]: t0 1.2214, t1 0.8187, t3 2.01 -> 1.5, t4 1
    double c0 = Math.exp(0.2), c1 = Math.exp(-0.2), c3 = 1.5, c4 = 1;
    double expected =
        -(c0 * 1.5 * -1.0 * 0.5 + c1 * 1.5 * -0.5 * 0.5 + c3 * -0.8 * -0.2 + c4 * -0.8 * -1.5)
            / DEN;
    assertEquals(expected, r.loss(), 1e-12);
    assertEquals(-c0 * 1.5 * 0.5 / DEN, r.gradient()[0], 1e-12);
    assertEquals(-c3 * -0.8 / DEN, r.gradient()[3], 1e-12);
    assertEquals(0.0, r.gradient()[2], 1e-12);
  }

  @Test
  void sequenceLevelUsesGeometricMeanOfHistoryRatios() {
    RlLoss.Result r = run(cfg(true, 10.0, 10.0, "sequence", null, null, null), NEW);
    // no clipping at ε = 10: ℓ = -ρ_seq·A. History 7: mean δ over t0,t1 = 0; history 9: (0.7 + 0)/2
    double s7 = Math.exp(0.0), s9 = Math.exp(0.35);
    double expected = -(s7 * 1.5 * 0.5 * 2 + s9 * -0.8 * 2) / DEN;
    assertEquals(expected, r.loss(), 1e-12);
    // d/dπ_t of -ρ_seq A w: -A w ρ_seq / n, summed over the history's two targets
    assertEquals(-s9 * -0.8 * 2 / 2 / DEN, r.gradient()[3], 1e-12);
  }

  @Test
  void averageAndGeometricAverageMixTheRatios() {
    double tok3 = Math.exp(0.7), seq9 = Math.exp(0.35);
    RlLoss.Result avg = run(cfg(true, 10.0, 10.0, "average", null, null, null), NEW);
    RlLoss.Result geo = run(cfg(true, 10.0, 10.0, "geometric_average", null, null, null), NEW);
    double h7avg = (Math.exp(0.2) + 1) / 2 * 1.5 * 0.5 + (Math.exp(-0.2) + 1) / 2 * 1.5 * 0.5;
    double h9avg = (tok3 + seq9) / 2 * -0.8 + (1 + seq9) / 2 * -0.8;
    assertEquals(-(h7avg + h9avg) / DEN, avg.loss(), 1e-12);
    double h7geo = Math.sqrt(Math.exp(0.2)) * 1.5 * 0.5 + Math.sqrt(Math.exp(-0.2)) * 1.5 * 0.5;
    double h9geo = Math.sqrt(tok3 * seq9) * -0.8 + Math.sqrt(seq9) * -0.8;
    assertEquals(-(h7geo + h9geo) / DEN, geo.loss(), 1e-12);
  }

  @Test
  void maxNegativeAdvantageWeightCapsEveryRatio() {
    RlLoss.Result r = run(cfg(true, 0.2, 0.2, "token", null, null, 1.1), NEW);
    // t0 ρ 1.2214 -> 1.1 (A > 0: min(1.1A, 1.1A)), t3 ρ 2.01 -> 1.1 (A < 0: min(1.1A, 1.1A))
    double expected = -(1.1 * 1.5 * 0.5 + Math.exp(-0.2) * 1.5 * 0.5 + 1.1 * -0.8 + 1 * -0.8) / DEN;
    assertEquals(expected, r.loss(), 1e-12);
    assertEquals(0.0, r.gradient()[3], 1e-12); // capped ratio is constant
  }

  @Test
  void maskProbRatioZeroesRatiosOutsideTheTrustRegion() {
    RlLoss.Result ppo = run(cfg(true, 0.2, 0.2, "token", null, true, null), NEW);
    // t0 (1.22) and t3 (2.01) masked to ρ = 0: PPO terms -min(0, 0.8A): t0 -> 0, t3 -> -0.8·-0.8
    double expected = -(0 + Math.exp(-0.2) * 1.5 * 0.5 + 0.8 * -0.8 + 1 * -0.8) / DEN;
    assertEquals(expected, ppo.loss(), 1e-12);
    assertEquals(0.0, ppo.gradient()[0], 1e-12);
    assertEquals(0.0, ppo.gradient()[3], 1e-12);
    // CISPO: the masked ratio is clipped back up to 1 - ε = 0.8
    RlLoss.Result cispo = run(cfg(false, 0.2, 0.2, "token", null, true, null), NEW);
    assertEquals(-0.8 * 1.5 * 0.5 / DEN, cispo.gradient()[0], 1e-12);
  }

  @Test
  void kimiTauShiftsAdvantagesByStoppedLogRatio() {
    RlLoss.Result r = run(cfg(false, 10.0, 10.0, "token", 0.5, null, null), NEW);
    // A' = A - 0.5 δ; δ = 0.2, -0.2, 0.7, 0
    double[] a = {1.5 - 0.1, 1.5 + 0.1, 0, -0.8 - 0.35, -0.8};
    double expected =
        -(Math.exp(0.2) * a[0] * -1.0 * 0.5
                + Math.exp(-0.2) * a[1] * -0.5 * 0.5
                + Math.exp(0.7) * a[3] * -0.2
                + a[4] * -1.5)
            / DEN;
    assertEquals(expected, r.loss(), 1e-12);
    assertEquals(-Math.exp(0.7) * a[3] / DEN, r.gradient()[3], 1e-12);
  }

  @Test
  void ppoGradientMatchesFiniteDifferencesForEveryLevelAndModifier() {
    String[] levels = {"token", "sequence", "average", "geometric_average"};
    for (String level : levels)
      for (boolean mask : new boolean[] {false, true})
        for (Double cap : new Double[] {null, 1.5}) {
          TrainingConfig c = cfg(true, 0.3, 0.6, level, null, mask, cap);
          double[] g = run(c, NEW).gradient();
          for (int t = 0; t < NEW.length; t++) {
            double h = 1e-6;
            double[] p = NEW.clone();
            double[] m = NEW.clone();
            p[t] += h;
            m[t] -= h;
            // target 4 has no old logprob, so its δ is 0 whatever π_new: FD sees ratio 1 but the
            // analytic gradient (like torch's new - new.detach()) is still -A·w
            if (t == 4) continue;
            double fd = (run(c, p).loss() - run(c, m).loss()) / (2 * h);
            assertEquals(fd, g[t], 1e-7, level + " mask=" + mask + " cap=" + cap + " t=" + t);
          }
        }
  }
}
