package dev.troupe.engine.sampling;

/**
 * One entry of a logprobs dictionary, vLLM's {@code Logprob}: the raw log-probability (floored at
 * {@link Logprobs#FLOOR}) and the 1-based rank of the token among the whole vocabulary.
 */
public record TokenLogprob(int tokenId, float logprob, int rank) {
  public TokenLogprob {
    if (tokenId < 0) throw new IllegalArgumentException("negative token id " + tokenId);
  }
}
