package dev.troupe.engine.structured;

import dev.troupe.engine.reasoning.ReasoningParser;
import dev.troupe.engine.reasoning.ReasoningParser.Phase;
import dev.troupe.engine.sampling.TokenConstraint;
import dev.troupe.engine.structured.grammar.GrammarMatcher;

/**
 * One choice's structured-output constraint, the {@link TokenConstraint} the sampler applies after
 * every other logits processor: logits of tokens the grammar does not allow next become −inf.
 *
 * <p>With a reasoning parser the grammar applies to the content only, as vLLM does: while the
 * choice is reasoning nothing is masked; while it is undecided (its first token decides) the
 * parser's start token ({@code <think>}) is allowed next to the grammar's tokens.
 *
 * <p>Validity wins over other controls: when {@code min_tokens}, {@code logit_bias}, {@code
 * bad_words} or {@code allowed_token_ids} removed every token the grammar allows, those tokens are
 * put back with equal logits (vLLM would sample a token outside the grammar instead).
 *
 * <p>Engine thread only; the matcher survives preemption (it depends only on accepted tokens).
 */
public final class GrammarConstraint implements TokenConstraint {

  /**
   * Slack (tokens beyond what completing the output needs) below which masks are also checked
   * against the budget. Above it a single token would have to add this many bytes to the shortest
   * completion to strand the output; checking every step would walk every allowed token each time.
   */
  static final int BUDGET_WINDOW = 128;

  private final GrammarMatcher matcher;
  private final ReasoningParser.Session reasoning; // null: no reasoning parser
  private final long[] bits;
  private final boolean withinBudget;
  private boolean budgetSteered;

  /**
   * A constraint that keeps its output completable within the choice's budget.
   *
   * @param matcher a fresh matcher of the request's grammar (a fork per choice)
   * @param reasoning the choice's reasoning session, or null when the model has no parser
   */
  public GrammarConstraint(GrammarMatcher matcher, ReasoningParser.Session reasoning) {
    this(matcher, reasoning, true);
  }

  /**
   * @param withinBudget keep the output completable within the tokens the choice has left
   */
  public GrammarConstraint(
      GrammarMatcher matcher, ReasoningParser.Session reasoning, boolean withinBudget) {
    this.matcher = matcher;
    this.reasoning = reasoning;
    this.withinBudget = withinBudget;
    this.bits = new long[(matcher.grammar().vocabulary().size() + 63) >>> 6];
  }

  private Phase phase() {
    return reasoning == null ? Phase.CONTENT : reasoning.phase();
  }

  @Override
  public void mask(float[] logits) {
    mask(logits, Integer.MAX_VALUE);
  }

  /**
   * The grammar's mask; near the end of the budget, only the tokens after which the output can
   * still be completed within it (so an output whose model would wander, in a long string, in
   * nested values, is closed in time and ends valid, with {@code length}); a reasoning that would
   * leave no room for the content is ended with its end tag.
   */
  @Override
  public void mask(float[] logits, int tokensLeft) {
    Phase phase = phase();
    if (phase == Phase.REASONING) {
      // the reasoning ends while the constrained content still fits: its end tag, the content's
      // fewest bytes (one token each), the stop token
      if (withinBudget && (long) tokensLeft <= matcher.bytesToComplete() + 2L) endReasoning(logits);
      return;
    }
    matcher.fillNextTokenMask(bits);
    if (withinBudget && (long) tokensLeft - 2 - matcher.bytesToComplete() < BUDGET_WINDOW)
      budgetSteered |= matcher.restrictToBudget(bits, tokensLeft);
    // reasoning may start only while its tags and the content still fit after it
    boolean roomToReason = !withinBudget || (long) tokensLeft >= matcher.bytesToComplete() + 3L;
    if (phase == Phase.UNDECIDED && roomToReason) {
      int start = reasoning.startTokenId();
      if (start >= 0 && start < logits.length) bits[start >>> 6] |= 1L << start;
    }
    if (!apply(logits)) {
      // nothing the grammar allows survived the other processors: allow it all, evenly
      for (int w = 0; w < bits.length; w++) {
        long m = bits[w];
        while (m != 0) {
          int id = (w << 6) + Long.numberOfTrailingZeros(m);
          if (id < logits.length) logits[id] = 0f;
          m &= m - 1;
        }
      }
    }
  }

  /** Only the reasoning's end tag may come next (if the parser has one). */
  private void endReasoning(float[] logits) {
    int end = reasoning.endTokenId();
    if (end < 0 || end >= logits.length) return;
    float keep = logits[end];
    java.util.Arrays.fill(logits, Float.NEGATIVE_INFINITY);
    logits[end] = Float.isFinite(keep) ? keep : 0f;
    budgetSteered = true;
  }

  /** Masks the row; returns whether an allowed token kept a finite logit. */
  private boolean apply(float[] x) {
    boolean finite = false;
    int n = x.length;
    for (int w = 0; w < bits.length; w++) {
      long m = bits[w];
      int base = w << 6;
      int end = Math.min(64, n - base);
      if (m == 0) {
        java.util.Arrays.fill(x, base, base + end, Float.NEGATIVE_INFINITY);
        continue;
      }
      if (m == -1L) {
        if (!finite)
          for (int i = base; i < base + end && !finite; i++)
            finite = x[i] != Float.NEGATIVE_INFINITY;
        continue;
      }
      for (int i = 0; i < end; i++) {
        if ((m & (1L << i)) == 0) x[base + i] = Float.NEGATIVE_INFINITY;
        else if (!finite && x[base + i] != Float.NEGATIVE_INFINITY) finite = true;
      }
    }
    return finite;
  }

  @Override
  public void accept(int token) {
    Phase phase = phase();
    if (reasoning != null) reasoning.onToken(token);
    if (phase == Phase.REASONING) return;
    if (phase == Phase.UNDECIDED && token == reasoning.startTokenId()) return;
    if (!matcher.accept(token))
      throw new IllegalStateException(
          "token " + token + " is not allowed by the request's grammar");
  }

  /** The grammar accepted a stop token: the choice is complete and must end. */
  @Override
  public boolean finished() {
    return matcher.isTerminated();
  }

  @Override
  public boolean completedByBudget() {
    return budgetSteered && matcher.isTerminated();
  }

  /** The matcher (tests). */
  GrammarMatcher matcher() {
    return matcher;
  }
}
