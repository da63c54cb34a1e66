package dev.troupe.engine.sampling;

import dev.troupe.engine.Tokenizer;
import java.util.List;
import java.util.OptionalInt;
import java.util.Set;

/** A test tokenizer over an explicit vocabulary: greedy longest match, decode = concatenation. */
final class ListTokenizer implements Tokenizer {
  private final List<String> vocab;

  ListTokenizer(List<String> vocab) {
    this.vocab = List.copyOf(vocab);
  }

  @Override
  public int[] encode(String text, boolean addSpecialTokens) {
    int[] out = new int[text.length()];
    int n = 0;
    int pos = 0;
    while (pos < text.length()) {
      int best = -1;
      for (int id = 0; id < vocab.size(); id++) {
        String t = vocab.get(id);
        if (!t.isEmpty()
            && text.startsWith(t, pos)
            && (best < 0 || t.length() > vocab.get(best).length())) best = id;
      }
      if (best < 0) throw new IllegalArgumentException("cannot encode " + text);
      out[n++] = best;
      pos += vocab.get(best).length();
    }
    return java.util.Arrays.copyOf(out, n);
  }

  @Override
  public String decode(int[] ids, boolean skipSpecialTokens, boolean spacesBetweenSpecialTokens) {
    StringBuilder sb = new StringBuilder();
    for (int id : ids) sb.append(vocab.get(id));
    return sb.toString();
  }

  @Override
  public String idToToken(int id) {
    return id >= 0 && id < vocab.size() ? vocab.get(id) : null;
  }

  @Override
  public OptionalInt tokenToId(String token) {
    int i = vocab.indexOf(token);
    return i < 0 ? OptionalInt.empty() : OptionalInt.of(i);
  }

  @Override
  public int vocabSize() {
    return vocab.size();
  }

  @Override
  public Set<Integer> specialTokenIds() {
    return Set.of();
  }

  @Override
  public IncrementalDetokenizer newDetokenizer(
      int[] promptIds, boolean skipSpecialTokens, boolean spacesBetweenSpecialTokens) {
    return new IncrementalDetokenizer() {
      private final StringBuilder text = new StringBuilder();

      @Override
      public String append(int id) {
        String s = vocab.get(id);
        text.append(s);
        return s;
      }

      @Override
      public String text() {
        return text.toString();
      }

      @Override
      public String finish() {
        return "";
      }
    };
  }
}
