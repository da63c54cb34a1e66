package dev.troupe.training;

/**
 * One rendered and tokenized conversation of a trajectory (its main history or one of its {@code
 * additional_histories}), per token.
 *
 * @param tokens token ids
 * @param trainable the token was sampled in an assistant choice and is trained on
 * @param logprobs the sampler's logprob of the token, NaN when unknown or not trainable
 */
public record TokenizedHistory(int[] tokens, boolean[] trainable, double[] logprobs) {
  public TokenizedHistory {
    if (trainable.length != tokens.length || logprobs.length != tokens.length)
      throw new IllegalArgumentException("per-token arrays differ in length");
  }

  public int length() {
    return tokens.length;
  }

  public int numTrainable() {
    int c = 0;
    for (boolean b : trainable) if (b) c++;
    return c;
  }
}
