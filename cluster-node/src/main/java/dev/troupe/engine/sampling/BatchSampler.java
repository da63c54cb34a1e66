package dev.troupe.engine.sampling;

import java.util.ArrayList;
import java.util.List;

/**
 * Host sampling of rows whose logits are on the host: each row through its choice's {@link
 * Sampler}, in order. The step's sampling stage ({@link SamplingStage}) sends every row here on a
 * CPU runner, and on a device runner the rows the device cannot sample exactly.
 *
 * <p>Isolation: a row whose sampling throws (a custom logits processor, a token constraint, any
 * per-request state) yields its error and the other rows are sampled as usual; only that row's
 * request fails. {@link StackOverflowError} and {@link OutOfMemoryError} raised by such per-request
 * code count as that row's error too, so they never reach the actor system's fatal-error handler.
 *
 * <p>Thread: the engine's (the samplers are confined to it).
 */
public final class BatchSampler {

  /** One row to sample: the choice's sampler and its raw logits (not modified). */
  public record Row(Sampler sampler, float[] logits) {}

  /** A row's outcome: the sample, or why the row failed (the other is null). */
  public record Outcome(Sample sample, Throwable error) {
    public boolean failed() {
      return error != null;
    }
  }

  /** Samples every row; one outcome per row, in order. Does not {@link Sampler#accept} tokens. */
  public List<Outcome> sample(List<Row> rows) {
    List<Outcome> out = new ArrayList<>(rows.size());
    for (Row row : rows) {
      try {
        out.add(new Outcome(row.sampler().next(row.logits()), null));
      } catch (RuntimeException | StackOverflowError | OutOfMemoryError e) {
        out.add(new Outcome(null, e));
      }
    }
    return out;
  }
}
