package dev.troupe.training;

import dev.troupe.engine.Tokenizer;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalInt;
import java.util.Set;

/**
 * A character tokenizer for tiny test models: ids 0-3 are the specials {@code <|im_start|>}, {@code
 * <|im_end|>}, {@code <|pad|>}, {@code <|sentinel|>}; every other character c is {@code 4 + c %
 * (vocab - 4)}.
 */
final class CharTokenizer implements Tokenizer {
  static final List<String> SPECIALS =
      List.of("<|im_start|>", "<|im_end|>", "<|pad|>", "<|sentinel|>");
  private final int vocab;

  CharTokenizer(int vocab) {
    this.vocab = vocab;
  }

  int id(char c) {
    return 4 + c % (vocab - 4);
  }

  @Override
  public int[] encode(String text, boolean addSpecialTokens) {
    List<Integer> out = new ArrayList<>();
    int i = 0;
    outer:
    while (i < text.length()) {
      for (int s = 0; s < SPECIALS.size(); s++)
        if (text.startsWith(SPECIALS.get(s), i)) {
          out.add(s);
          i += SPECIALS.get(s).length();
          continue outer;
        }
      out.add(id(text.charAt(i++)));
    }
    return out.stream().mapToInt(Integer::intValue).toArray();
  }

  @Override
  public String decode(int[] ids, boolean skipSpecialTokens, boolean spacesBetweenSpecialTokens) {
    throw new UnsupportedOperationException();
  }

  @Override
  public String idToToken(int id) {
    return id < 4 ? SPECIALS.get(id) : null;
  }

  @Override
  public OptionalInt tokenToId(String token) {
    int i = SPECIALS.indexOf(token);
    if (i >= 0) return OptionalInt.of(i);
    if (token.startsWith("c:")) return OptionalInt.of(id(token.charAt(2)));
    return OptionalInt.empty();
  }

  @Override
  public int vocabSize() {
    return vocab;
  }

  @Override
  public Set<Integer> specialTokenIds() {
    return Set.of(0, 1, 2, 3);
  }

  @Override
  public IncrementalDetokenizer newDetokenizer(int[] p, boolean s, boolean b) {
    throw new UnsupportedOperationException();
  }
}
