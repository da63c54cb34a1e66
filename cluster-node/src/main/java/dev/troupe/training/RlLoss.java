package dev.troupe.training;

import dev.troupe.protocol.cluster.TrainingConfig;
import java.util.HashMap;
import java.util.Map;

/**
 * ART's RL objective for one packed row ({@code src/art/loss.py}), with its gradient with respect
 * to the new log-probabilities computed by hand. Pure Java, no tensor library: the model
 * backpropagates {@link Result#gradient()} through its own forward.
 *
 * <p>Per target t with m_t = 1: δ_t = π_new − π_old (π_old = sg(π_new) when unknown), ρ_t =
 * exp(δ_t); the importance-sampling level mixes in ρ^seq = exp(mean δ over the history); then ρ ←
 * min(ρ, M); then the optional mask outside (1 − ε, 1 + ε_high); then A ← A − τ·sg(δ). PPO: ℓ =
 * −min(ρA, clip(ρ)A); CISPO: ℓ = −clip(sg(ρ))·A·π_new. Row loss L = Σ ℓ_t w_t m_t / (Σ m_t + 1e-6).
 */
public final class RlLoss {
  private static final double MASK_EPS = 1e-6;

  private RlLoss() {}

  /**
   * The loss and dL/dπ_new.
   *
   * @param newLogprobs π_new per target [T]
   * @param oldLogprobs π_old per target, NaN = unknown [T]
   * @param advantages A per target [T]
   * @param weights w per target [T]
   * @param mask trainable targets [T]
   * @param historyIds history of each target, for sequence-level ratios [T]
   */
  public static Result compute(
      TrainingConfig config,
      double[] newLogprobs,
      double[] oldLogprobs,
      double[] advantages,
      double[] weights,
      boolean[] mask,
      int[] historyIds) {
    int n = newLogprobs.length;
    double[] grad = new double[n];
    int trainable = 0;
    for (boolean m : mask) if (m) trainable++;
    double denominator = trainable + MASK_EPS;

    // δ_t and the token ratio; unknown old logprobs mean "sampled by the current policy" (δ = 0)
    double[] delta = new double[n];
    double[] tokenRatio = new double[n];
    for (int t = 0; t < n; t++) {
      if (!mask[t]) continue;
      double old = Double.isNaN(oldLogprobs[t]) ? newLogprobs[t] : oldLogprobs[t];
      delta[t] = newLogprobs[t] - old;
      tokenRatio[t] = Math.exp(delta[t]);
    }
    // sequence ratio per history: exp(mean δ over its trainable targets)
    Map<Integer, double[]> sums = new HashMap<>(); // history -> {Σδ, count}
    for (int t = 0; t < n; t++) {
      if (!mask[t]) continue;
      double[] s = sums.computeIfAbsent(historyIds[t], k -> new double[2]);
      s[0] += delta[t];
      s[1] += 1;
    }
    double[] seqRatio = new double[n];
    double[] seqCount = new double[n];
    for (int t = 0; t < n; t++) {
      if (!mask[t]) continue;
      double[] s = sums.get(historyIds[t]);
      seqRatio[t] = Math.exp(s[0] / s[1]);
      seqCount[t] = s[1];
    }

    double lo = 1 - config.epsilon();
    double hi = 1 + config.epsilonHigh();
    Double cap = config.maxNegativeAdvantageImportanceSamplingWeight();
    double loss = 0;
    // per target: dL/dρ'_t and how ρ'_t depends on the token and sequence ratios
    double[] dRatio = new double[n];
    double[] dTok = new double[n];
    double[] dSeq = new double[n];
    for (int t = 0; t < n; t++) {
      if (!mask[t]) continue;
      double coef = weights[t] / denominator;
      double ratio;
      switch (config.importanceSamplingLevel()) {
        case TOKEN -> {
          ratio = tokenRatio[t];
          dTok[t] = 1;
        }
        case SEQUENCE -> {
          ratio = seqRatio[t];
          dSeq[t] = 1;
        }
        case AVERAGE -> {
          ratio = (tokenRatio[t] + seqRatio[t]) / 2;
          dTok[t] = 0.5;
          dSeq[t] = 0.5;
        }
        case GEOMETRIC_AVERAGE -> {
          ratio = Math.sqrt(tokenRatio[t]) * Math.sqrt(seqRatio[t]);
          dTok[t] = 0.5 * ratio / tokenRatio[t];
          dSeq[t] = 0.5 * ratio / seqRatio[t];
        }
        default -> throw new IllegalStateException();
      }
      double ratioPassesGrad = 1; // d(modified ratio)/d(ratio)
      if (cap != null && ratio > cap) {
        ratio = cap;
        ratioPassesGrad = 0;
      }
      if (config.maskProbRatio() && !(ratio > lo && ratio < hi)) {
        ratio = 0;
        ratioPassesGrad = 0;
      }
      double a = advantages[t];
      if (config.kimiK2Tau() != null) a -= config.kimiK2Tau() * delta[t];

      double clipped = Math.min(Math.max(ratio, lo), hi);
      if (config.ppo()) {
        double unclippedTerm = ratio * a;
        double clippedTerm = clipped * a;
        double dLdRatio; // d(-min(ρA, clip(ρ)A))/dρ
        boolean inside = ratio >= lo && ratio <= hi;
        if (unclippedTerm < clippedTerm) dLdRatio = -a;
        else if (unclippedTerm > clippedTerm) dLdRatio = inside ? -a : 0;
        else dLdRatio = inside ? -a : -a / 2; // tie: torch splits the gradient between branches
        loss += -Math.min(unclippedTerm, clippedTerm) * coef;
        dRatio[t] = dLdRatio * ratioPassesGrad * coef;
      } else {
        // CISPO: the clipped ratio is a constant weight on the log-probability
        loss += -clipped * a * newLogprobs[t] * coef;
        grad[t] += -clipped * a * coef;
      }
    }
    if (config.ppo()) {
      // chain through ρ_t = exp(δ_t) and ρ^seq = exp(mean δ) to π_new
      Map<Integer, Double> seqGrad = new HashMap<>();
      for (int t = 0; t < n; t++) {
        if (!mask[t]) continue;
        grad[t] += dRatio[t] * dTok[t] * tokenRatio[t];
        if (dSeq[t] != 0)
          seqGrad.merge(
              historyIds[t], dRatio[t] * dSeq[t] * seqRatio[t] / seqCount[t], Double::sum);
      }
      if (!seqGrad.isEmpty())
        for (int t = 0; t < n; t++)
          if (mask[t]) grad[t] += seqGrad.getOrDefault(historyIds[t], 0.0);
    }
    return new Result(loss, grad);
  }

  /**
   * @param loss the row's policy loss L
   * @param gradient dL/dπ_new per target (0 where the mask is 0)
   */
  public record Result(double loss, double[] gradient) {}
}
