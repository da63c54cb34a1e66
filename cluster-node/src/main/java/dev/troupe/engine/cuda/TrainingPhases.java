package dev.troupe.engine.cuda;

import java.util.EnumMap;
import java.util.Map;

/**
 * Where a training step's device time goes, when asked ({@link CudaTrainer#timePhases}): the
 * trainer marks each change of phase, and while timing is on every mark waits for the device
 * ({@link Gpu#synchronize}) and charges the wall time since the previous mark to the phase that
 * ran. The waits themselves cost time (a few microseconds each, hundreds of marks per step), so a
 * timed step is slower than an untimed one: a diagnostic for a GPU run, never on while serving.
 * Off, a mark is a field test.
 */
final class TrainingPhases {
  /** The parts of a step, as the GPU benchmark reports them. */
  enum Phase {
    /** cuBLAS products of the projections, LoRA and the LM head. */
    PRODUCTS,
    /** Attention's forward (its products and softmax), the backward's recompute included. */
    ATTENTION_FORWARD,
    /** Attention's backward: its products and the softmax backward. */
    ATTENTION_BACKWARD,
    /** Norms, RoPE, SwiGLU, embeddings, copies, conversions and their backwards. */
    ELEMENTWISE,
    /** The LM head's log-softmax (forward and backward) and the RL loss. */
    LOSS,
    /** Gradient norm and AdamW. */
    OPTIMIZER
  }

  private final Gpu gpu;
  private final Map<Phase, Long> nanos = new EnumMap<>(Phase.class);
  private Phase current;
  private long since;
  private boolean on;

  TrainingPhases(Gpu gpu) {
    this.gpu = gpu;
  }

  /** Starts (clearing the totals) or stops timing. */
  void time(boolean on) {
    this.on = on;
    nanos.clear();
    current = null;
  }

  /** The work queued from here on belongs to {@code p}. */
  void at(Phase p) {
    if (!on || p == current) return;
    stop();
    current = p;
  }

  /** Charges the work since the last mark; the totals in milliseconds, every phase present. */
  Map<Phase, Double> finish() {
    if (on) stop();
    current = null;
    Map<Phase, Double> ms = new EnumMap<>(Phase.class);
    for (Phase p : Phase.values()) ms.put(p, nanos.getOrDefault(p, 0L) / 1e6);
    return ms;
  }

  private void stop() {
    gpu.synchronize();
    long now = System.nanoTime();
    if (current != null) nanos.merge(current, now - since, Long::sum);
    since = now;
  }
}
