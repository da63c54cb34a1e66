package dev.troupe.engine.sampling;

import dev.troupe.engine.Tokenizer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * {@code bad_words} as vLLM tokenises and applies them ({@code
 * SamplingParams.update_from_tokenizer} and {@code v1/sample/ops/bad_words.py}).
 *
 * <p>Each word, leading whitespace stripped, is tokenised without special tokens as-is and with one
 * leading space; the spaced variant is kept only when it starts with a different token and has the
 * same number of tokens (so it really is "the same word mid-text"). At each step, for every token
 * sequence: a single token is always banned; for longer ones the last token is banned when the
 * output so far ends with all the tokens before it.
 */
final class BadWords {

  private final int[][] sequences;

  private BadWords(int[][] sequences) {
    this.sequences = sequences;
  }

  static BadWords of(List<String> words, Tokenizer tokenizer, int vocabSize) {
    if (words.isEmpty()) return new BadWords(new int[0][]);
    if (tokenizer == null) throw new IllegalStateException("bad_words need a tokenizer");
    List<int[]> out = new ArrayList<>();
    for (String word : words) {
      String stripped = word.stripLeading();
      int[] plain = tokenizer.encode(stripped, false);
      int[] spaced = tokenizer.encode(" " + stripped, false);
      add(out, plain, word, vocabSize);
      if (spaced.length > 0
          && spaced.length == plain.length
          && (plain.length == 0 || spaced[0] != plain[0])) add(out, spaced, word, vocabSize);
    }
    return new BadWords(out.toArray(new int[0][]));
  }

  private static void add(List<int[]> out, int[] ids, String word, int vocabSize) {
    if (ids.length == 0) return; // an empty word bans nothing
    for (int id : ids)
      if (id < 0 || id >= vocabSize)
        throw new InvalidSamplingParamsException(
            "bad_words",
            "The model vocabulary size is "
                + vocabSize
                + ", but the following tokens were"
                + " specified as bad: "
                + id
                + " (from bad word "
                + quote(word)
                + ")");
    out.add(ids);
  }

  private static String quote(String s) {
    return "'" + s + "'";
  }

  boolean isEmpty() {
    return sequences.length == 0;
  }

  /** Sets banned logits to -inf given the output so far ({@code output[0 .. outputLength)}). */
  void apply(float[] logits, int[] output, int outputLength) {
    for (int[] seq : sequences) {
      int prefix = seq.length - 1;
      if (prefix > outputLength) continue;
      if (Arrays.equals(seq, 0, prefix, output, outputLength - prefix, outputLength))
        logits[seq[prefix]] = Float.NEGATIVE_INFINITY;
    }
  }

  /** The distinct ids {@link #apply} would ban given the output so far, ascending. */
  int[] banned(int[] output, int outputLength) {
    java.util.TreeSet<Integer> out = new java.util.TreeSet<>();
    for (int[] seq : sequences) {
      int prefix = seq.length - 1;
      if (prefix > outputLength) continue;
      if (Arrays.equals(seq, 0, prefix, output, outputLength - prefix, outputLength))
        out.add(seq[prefix]);
    }
    return out.stream().mapToInt(Integer::intValue).toArray();
  }

  /** The token sequences in force (for tests and diagnostics). */
  List<int[]> sequences() {
    List<int[]> copy = new ArrayList<>();
    for (int[] s : sequences) copy.add(s.clone());
    return copy;
  }
}
