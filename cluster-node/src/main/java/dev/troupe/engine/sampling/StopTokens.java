package dev.troupe.engine.sampling;

import dev.troupe.protocol.cluster.SamplingParams;
import java.util.HashSet;
import java.util.Set;

/**
 * The stops the engine core decides from token ids alone, as vLLM v1's scheduler does ({@code
 * v1/core/sched/utils.check_stop}); stop strings need text and are the output processor's ({@link
 * StopChecker}). Per generated token, in this order:
 *
 * <ol>
 *   <li>{@code max_tokens} reached → {@code length} (even if the token is EOS);
 *   <li>before {@code min_tokens} outputs nothing else stops;
 *   <li>EOS (unless {@code ignore_eos}) → {@code stop}, {@code stop_reason} null; a {@code
 *       stop_token_ids} id (plus the generation-config EOS ids unless {@code ignore_eos}) → {@code
 *       stop}, {@code stop_reason} = the id.
 * </ol>
 *
 * <p>Not thread-safe: one per choice, on the engine thread.
 */
public final class StopTokens {
  private final int maxTokens;
  private final int minTokens;
  private final boolean ignoreEos;
  private final int eosTokenId;
  private final Set<Integer> stopTokenIds;
  private int outputLength;

  public StopTokens(SamplingParams params, EosTokens eos) {
    this.maxTokens = params.maxTokens();
    this.minTokens = params.minTokens();
    this.ignoreEos = params.ignoreEos();
    this.eosTokenId = eos.eosTokenId();
    Set<Integer> ids = new HashSet<>(params.stopTokenIds());
    if (!ignoreEos) ids.addAll(eos.generationEosIds());
    this.stopTokenIds = Set.copyOf(ids);
  }

  /** Records one generated token; returns why it ends the choice, or null when it does not. */
  public StopChecker.Finish check(int token) {
    outputLength++;
    if (outputLength >= maxTokens) return new StopChecker.Finish(FinishReason.LENGTH, null, null);
    if (outputLength < minTokens) return null;
    if (!ignoreEos && eosTokenId >= 0 && token == eosTokenId)
      return new StopChecker.Finish(FinishReason.STOP, null, null);
    if (stopTokenIds.contains(token)) return new StopChecker.Finish(FinishReason.STOP, null, token);
    return null;
  }

  /** Tokens checked so far. */
  public int outputLength() {
    return outputLength;
  }
}
