package dev.troupe.engine.sampling;

/**
 * A per-choice constraint on which token may come next: the seam where structured outputs (a
 * grammar, JSON schema, regex or choice list compiled to a token automaton) plug into sampling.
 *
 * <p>{@link Sampler} calls {@link #mask} on the choice's processed logits row after every other
 * processor (allowed ids, bad words, {@code min_tokens}, {@code logit_bias}, custom logits
 * processors, penalties) and before the greedy or random pick, then {@link #accept} with the token
 * appended to the choice. Raw logprobs are computed before any processing, so a mask never shows in
 * them. When the mask leaves no token the sampler picks the argmax of the masked row, as for any
 * other mask. One instance per choice, on the engine thread; a {@link SamplingSetup} carries them
 * from the input processor (where a grammar is compiled, off the engine thread) to the sampler.
 */
public interface TokenConstraint {

  /** Sets the logit of every token that may not come next to negative infinity, in place. */
  void mask(float[] logits);

  /**
   * As {@link #mask(float[])}, knowing how many tokens the choice may still generate, this one
   * included (what its {@code max_tokens} leaves): a constraint may keep its output completable
   * within them.
   */
  default void mask(float[] logits, int tokensLeft) {
    mask(logits);
  }

  /** Advances the constraint by the token the choice appended. */
  void accept(int token);

  /**
   * Whether the last accepted token completed the constraint, so nothing may follow: the core ends
   * the choice with {@code stop} even when the token would not end it by itself ({@code
   * ignore_eos}, {@code min_tokens} not reached).
   */
  default boolean finished() {
    return false;
  }

  /**
   * Whether the token budget steered the output to its completion (a token that would have kept the
   * output going was held back because it could not have been completed after it): the core then
   * ends the choice with {@code length}, since the budget, not the model, ended it.
   */
  default boolean completedByBudget() {
    return false;
  }
}
