package dev.troupe.training;

/**
 * One packed training sequence: several tokenized histories laid end to end, each attending only to
 * itself (block-diagonal causal attention) with positions restarting at 0. One optimizer step each.
 *
 * <p>Input arrays ({@code tokens}, {@code positions}, {@code segments}) are per position. Target
 * arrays are already shifted: entry t describes predicting {@code tokens[t + 1]} from position t,
 * so the last entry and the last entry of every segment are never trainable.
 *
 * @param tokens token ids [T]
 * @param positions RoPE position of each token within its segment [T]
 * @param segments segment (history) index of each token within the row [T]
 * @param mask the target is a sampled assistant token to train on [T]
 * @param oldLogprobs sampler logprob of the target, NaN when unknown [T]
 * @param advantages advantage of the target's trajectory [T] (mutable: normalised in place)
 * @param weights 1 / trainable tokens of the target's trajectory [T] (mutable)
 * @param historyIds job-wide history id of the target, for sequence-level ratios [T]
 */
public record PackedRow(
    int[] tokens,
    int[] positions,
    int[] segments,
    boolean[] mask,
    double[] oldLogprobs,
    double[] advantages,
    double[] weights,
    int[] historyIds) {

  public PackedRow {
    int n = tokens.length;
    if (positions.length != n
        || segments.length != n
        || mask.length != n
        || oldLogprobs.length != n
        || advantages.length != n
        || weights.length != n
        || historyIds.length != n)
      throw new IllegalArgumentException("row arrays differ in length");
  }

  public int length() {
    return tokens.length;
  }

  /** Number of trainable targets. */
  public int numTrainable() {
    int c = 0;
    for (boolean m : mask) if (m) c++;
    return c;
  }
}
