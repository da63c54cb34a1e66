package dev.troupe.engine.serving;

import dev.troupe.engine.spi.LogitsProcessor;

/** Custom logits processors that fail on purpose, loaded by class name (isolation tests). */
public final class FaultyProcessors {
  private FaultyProcessors() {}

  /** Throws once its choice has {@code args[0]} tokens: a failure in the middle of a stream. */
  public static final class ThrowsAfter implements LogitsProcessor {
    private final int after;

    public ThrowsAfter(LogitsProcessor.Init init) {
      this.after = ((Number) init.args().get(0)).intValue();
    }

    @Override
    public void apply(Context context, float[] logits) {
      if (context.outputLength() >= after)
        throw new IllegalStateException("processor gave up after " + after + " tokens");
    }
  }

  /** Recurses without end: a {@link StackOverflowError} from request code, in the step. */
  public static final class Overflows implements LogitsProcessor {
    public Overflows(LogitsProcessor.Init init) {}

    @Override
    public void apply(Context context, float[] logits) {
      logits[0] = depth(0);
    }

    private static float depth(int n) {
      return depth(n + 1) + 1;
    }
  }
}
