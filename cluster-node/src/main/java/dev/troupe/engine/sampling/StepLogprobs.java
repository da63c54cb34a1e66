package dev.troupe.engine.sampling;

import java.util.List;

/**
 * The logprobs of one position (a generated token, or a prompt token), as token ids, raw floats and
 * ranks: what the engine core reports; the output processor adds the tokens' text.
 *
 * @param chosen the token at this position, its raw logprob (floored) and its rank
 * @param top the alternatives reported with it, in the order the API writes them: for sampled
 *     tokens vLLM's dictionary order (the sampled token first, then the top k by rank), for beams
 *     and prompt positions the ranks 1..k (see docs/sampling.md)
 */
public record StepLogprobs(TokenLogprob chosen, List<TokenLogprob> top) {
  public StepLogprobs {
    if (chosen == null) throw new IllegalArgumentException("chosen is required");
    top = List.copyOf(top);
  }
}
