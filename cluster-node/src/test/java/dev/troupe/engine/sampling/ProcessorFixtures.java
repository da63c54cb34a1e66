package dev.troupe.engine.sampling;

import dev.troupe.engine.spi.LogitsProcessor;
import java.util.ArrayList;
import java.util.List;

/** Custom logits processors used by {@link LogitsProcessorTest}, loaded by class name. */
final class ProcessorFixtures {
  private ProcessorFixtures() {}

  static int explodingInitialised;
  static final List<String> seen = new ArrayList<>();

  /** Sets token {@code args[0]} to {@code kwargs.value} (default 4.0); records what it sees. */
  public static final class SetLogit implements LogitsProcessor {
    private final int token;
    private final float value;
    private final LogitsProcessor.Init init;

    public SetLogit(LogitsProcessor.Init init) {
      if (init.args().isEmpty()) throw new IllegalArgumentException("token id required");
      this.token = ((Number) init.args().get(0)).intValue();
      this.value = ((Number) init.kwargs().getOrDefault("value", 4.0)).floatValue();
      this.init = init;
    }

    @Override
    public void apply(Context context, float[] logits) {
      seen.add(
          "choice="
              + init.choiceIndex()
              + " prompt="
              + context.promptLength()
              + " out="
              + context.outputLength()
              + (context.outputLength() > 0
                  ? ":" + context.outputToken(context.outputLength() - 1)
                  : "")
              + " xargs="
              + context.engineXargs().get("tag"));
      logits[token] = value;
    }
  }

  /** No-argument constructor: boosts token 0 by 100. */
  public static final class BoostZero implements LogitsProcessor {
    public BoostZero() {}

    @Override
    public void apply(Context context, float[] logits) {
      logits[0] += 100;
    }
  }

  /** Argmax-invariant: records the largest logit it sees (after temperature). */
  public static final class RecordMax implements LogitsProcessor {
    public RecordMax() {}

    @Override
    public boolean argmaxInvariant() {
      return true;
    }

    @Override
    public void apply(Context context, float[] logits) {
      float max = Float.NEGATIVE_INFINITY;
      for (float f : logits) max = Math.max(max, f);
      seen.add("max=" + max);
    }
  }

  /** Never allowed: its static initialiser must not run. */
  public static final class Exploding implements LogitsProcessor {
    static {
      explodingInitialised++;
    }

    public Exploding() {}

    @Override
    public void apply(Context context, float[] logits) {}
  }

  /** Allowed but not a processor. */
  public static final class NotAProcessor {
    public NotAProcessor() {}
  }
}
