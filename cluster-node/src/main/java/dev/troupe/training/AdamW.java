package dev.troupe.training;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * AdamW with global-norm gradient clipping, as {@code torch.optim.AdamW} plus {@code
 * clip_grad_norm_} (decoupled weight decay, bias-corrected moments). Parameters are named double
 * arrays updated in place; the moment state survives between jobs when the trainer keeps this
 * object (and in checkpoints via {@link #state()}).
 *
 * @see <a href="https://pytorch.org/docs/stable/generated/torch.optim.AdamW.html">torch AdamW</a>
 */
public final class AdamW {
  private final Hyper hyper;
  private final Map<String, double[]> m = new LinkedHashMap<>();
  private final Map<String, double[]> v = new LinkedHashMap<>();
  private long step;

  public AdamW(Hyper hyper) {
    this.hyper = hyper;
  }

  /**
   * Hyperparameters; ART's RL values are {@link #ART}.
   *
   * @param maxGradNorm clip the global L2 norm of all gradients to this; 0 = no clipping
   */
  public record Hyper(
      double beta1, double beta2, double eps, double weightDecay, double maxGradNorm) {
    /** β 0.9 / 0.99, weight decay 0.1, max grad norm 0.1 (ART {@code get_model_config.py}). */
    public static final Hyper ART = new Hyper(0.9, 0.99, 1e-8, 0.1, 0.1);

    public Hyper {
      if (!(beta1 >= 0 && beta1 < 1) || !(beta2 >= 0 && beta2 < 1))
        throw new IllegalArgumentException("betas must be in [0, 1)");
      if (!(eps > 0) || !(weightDecay >= 0) || !(maxGradNorm >= 0))
        throw new IllegalArgumentException("eps > 0, weight decay and max grad norm >= 0");
    }
  }

  /** Number of steps taken. */
  public long step() {
    return step;
  }

  /** Global L2 norm of the gradients. */
  public static double globalNorm(Map<String, double[]> grads) {
    double s = 0;
    for (double[] g : grads.values()) for (double x : g) s += x * x;
    return Math.sqrt(s);
  }

  /**
   * One update in place. Gradients are first scaled by {@code min(1, maxGradNorm / (norm + 1e-6))}
   * (torch's clip_grad_norm_); parameters named in {@code noDecay} skip weight decay.
   *
   * @return the gradient norm before clipping
   */
  public double update(
      Map<String, double[]> params, Map<String, double[]> grads, double lr, Set<String> noDecay) {
    double norm = globalNorm(grads);
    double clip = hyper.maxGradNorm() > 0 ? Math.min(1, hyper.maxGradNorm() / (norm + 1e-6)) : 1;
    step++;
    double bc1 = 1 - Math.pow(hyper.beta1(), step);
    double bc2 = 1 - Math.pow(hyper.beta2(), step);
    for (Map.Entry<String, double[]> e : params.entrySet()) {
      String name = e.getKey();
      double[] p = e.getValue();
      double[] g = grads.get(name);
      if (g == null) throw new IllegalArgumentException("no gradient for " + name);
      double[] mm = m.computeIfAbsent(name, k -> new double[p.length]);
      double[] vv = v.computeIfAbsent(name, k -> new double[p.length]);
      double decay = noDecay.contains(name) ? 0 : hyper.weightDecay();
      for (int i = 0; i < p.length; i++) {
        double gi = g[i] * clip;
        p[i] -= lr * decay * p[i];
        mm[i] = hyper.beta1() * mm[i] + (1 - hyper.beta1()) * gi;
        vv[i] = hyper.beta2() * vv[i] + (1 - hyper.beta2()) * gi * gi;
        double mHat = mm[i] / bc1;
        double vHat = vv[i] / bc2;
        p[i] -= lr * mHat / (Math.sqrt(vHat) + hyper.eps());
      }
    }
    return norm;
  }

  /** The moment estimates and step count, for checkpoints. */
  public State state() {
    return new State(step, Map.copyOf(m), Map.copyOf(v));
  }

  /** Restores {@link #state()} (arrays are shared, not copied). */
  public void restore(State state) {
    step = state.step();
    m.clear();
    m.putAll(state.m());
    v.clear();
    v.putAll(state.v());
  }

  /** Optimizer state: first and second moments per parameter and the step count. */
  public record State(long step, Map<String, double[]> m, Map<String, double[]> v) {}
}
