package dev.troupe.training;

import java.util.List;

/**
 * Group-relative advantages and their token-level post-processing, as ART computes them ({@code
 * preprocessing/tokenize.py} for groups, {@code preprocessing/pack.py} for tokens).
 */
public final class Advantages {
  /** Added to the group std so a tiny spread does not explode advantages. */
  public static final double STD_EPS = 1e-6;

  private Advantages() {}

  /**
   * Per trajectory of one group: {@code r - mean(r)}, divided by {@code (std + 1e-6)} when {@code
   * scale} (population std). A result of exactly 0 means "drop this trajectory" (the caller still
   * counts it).
   */
  public static double[] group(double[] rewards, boolean scale) {
    int n = rewards.length;
    double[] out = new double[n];
    if (n == 0) return out;
    boolean allEqual = true;
    for (double r : rewards) allEqual &= r == rewards[0];
    if (allEqual) return out; // exactly 0, not a rounding residue of r - mean(r)
    double mean = 0;
    for (double r : rewards) mean += r;
    mean /= n;
    double std = populationStd(rewards, mean);
    for (int i = 0; i < n; i++) {
      double a = rewards[i] - mean;
      out[i] = scale ? a / (std + STD_EPS) : a;
    }
    return out;
  }

  /** Population standard deviation (divides by n, like {@code torch.std(unbiased=False)}). */
  public static double populationStd(double[] values) {
    if (values.length == 0) return 0;
    double mean = 0;
    for (double v : values) mean += v;
    return populationStd(values, mean / values.length);
  }

  private static double populationStd(double[] values, double mean) {
    double var = 0;
    for (double v : values) var += (v - mean) * (v - mean);
    return Math.sqrt(var / values.length);
  }

  /**
   * The batch-wide token step, in place over all rows of a job: (1) {@code advantage_balance} b
   * scales negative advantages by 1 - b (b > 0) or positive ones by 1 + b (b < 0); (2) the
   * per-trajectory weights are rescaled so their mean over all trainable tokens is 1; (3) the
   * advantages are divided by the mean of |A|·w over trainable tokens, so the reward scale never
   * matters. Rows without trainable tokens are left alone.
   */
  public static void normalize(List<PackedRow> rows, double balance) {
    double weightSum = 0;
    long count = 0;
    for (PackedRow row : rows) {
      for (int t = 0; t < row.length(); t++) {
        if (!row.mask()[t]) continue;
        double a = row.advantages()[t];
        if (balance > 0 && a < 0) a *= 1 - balance;
        else if (balance < 0 && a > 0) a *= 1 + balance;
        row.advantages()[t] = a;
        weightSum += row.weights()[t];
        count++;
      }
    }
    if (count == 0) return;
    double weightMean = weightSum / count;
    double absMean = 0;
    for (PackedRow row : rows)
      for (int t = 0; t < row.length(); t++) {
        if (!row.mask()[t]) continue;
        row.weights()[t] /= weightMean;
        absMean += Math.abs(row.advantages()[t]) * row.weights()[t];
      }
    absMean /= count;
    if (absMean == 0) return;
    for (PackedRow row : rows)
      for (int t = 0; t < row.length(); t++) if (row.mask()[t]) row.advantages()[t] /= absMean;
  }
}
