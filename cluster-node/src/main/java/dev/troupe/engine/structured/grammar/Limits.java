package dev.troupe.engine.structured.grammar;

/**
 * Size bounds of one compiled grammar; exceeding one is a {@link GrammarException.TooLarge} (a 400
 * for the request), never an out-of-memory or a stalled compile thread.
 *
 * @param maxNfaStates bound on the intermediate NFA (repetitions are unrolled into it)
 * @param maxStates bound on the DFA states of all rules together (each gets a precomputed token
 *     mask, so this also bounds compile time)
 * @param maxMaskBytes bound on the precomputed per-state token tables
 */
public record Limits(int maxNfaStates, int maxStates, long maxMaskBytes) {
  public Limits {
    if (maxNfaStates <= 0 || maxStates <= 0 || maxMaskBytes <= 0)
      throw new IllegalArgumentException("limits must be positive");
  }

  /** The defaults of {@code troupe.worker.structured-outputs} (see reference.conf). */
  public static Limits defaults() {
    return new Limits(200_000, 20_000, 256L << 20);
  }
}
