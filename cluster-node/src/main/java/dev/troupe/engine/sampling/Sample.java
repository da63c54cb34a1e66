package dev.troupe.engine.sampling;

import java.util.List;

/**
 * The token chosen at one step, with raw logprobs (computed from the model's logits before any
 * processing, vLLM's default {@code raw_logprobs} mode).
 *
 * <p>Logprobs cost a few vocabulary passes, so like vLLM they are computed only when the request
 * asks for them ({@code SamplingParams.logprobs != null}, 0 included); otherwise {@code logprob} is
 * NaN, {@code rank} 0 and {@code logprobs} null.
 *
 * @param token the chosen token id
 * @param logprob its raw log-probability, floored at {@link Logprobs#FLOOR}
 * @param rank its 1-based rank in the vocabulary (number of tokens with a logprob at least as high)
 * @param logprobs null when the request asked for no logprobs; else vLLM's per-position dictionary
 *     in insertion order: the sampled token first, then the top {@code k} tokens by rank, without
 *     duplicates (so {@code k} or {@code k + 1} entries)
 */
public record Sample(int token, float logprob, int rank, List<TokenLogprob> logprobs) {
  public Sample {
    logprobs = logprobs == null ? null : List.copyOf(logprobs);
  }

  /**
   * What the chat API returns as {@code top_logprobs}: the first {@code topLogprobs} dictionary
   * entries, not re-sorted (vLLM's behaviour: when the sampled token is not in the top k, this is
   * the sampled token plus the top k - 1). Negative means all (vLLM's {@code top_logprobs: -1}, the
   * whole vocabulary).
   */
  public List<TokenLogprob> chatTopLogprobs(int topLogprobs) {
    if (logprobs == null) return List.of();
    if (topLogprobs < 0) return logprobs;
    return logprobs.subList(0, Math.min(topLogprobs, logprobs.size()));
  }
}
