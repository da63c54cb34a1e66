package dev.troupe.engine.structured;

import dev.troupe.engine.Tokenizer;
import dev.troupe.engine.structured.grammar.TokenVocabulary;
import java.util.Collection;
import java.util.Set;

/** Builds the grammar engine's {@link TokenVocabulary} from a model's {@link Tokenizer}. */
public final class TokenVocabularies {

  private TokenVocabularies() {}

  /**
   * @param tokenizer the model's tokenizer; its special tokens are never allowed by a grammar
   * @param logitsSize the model's logits row length (may exceed the tokenizer's vocabulary)
   * @param stopTokens ids that end a choice (EOS and generation-config EOS ids): allowed exactly
   *     where the grammar may end
   */
  public static TokenVocabulary of(
      Tokenizer tokenizer, int logitsSize, Collection<Integer> stopTokens) {
    int n = Math.min(tokenizer.vocabSize(), logitsSize);
    Set<Integer> special = tokenizer.specialTokenIds();
    byte[][] bytes = new byte[n][];
    for (int id = 0; id < n; id++) if (!special.contains(id)) bytes[id] = tokenizer.tokenBytes(id);
    return new TokenVocabulary(
        logitsSize, bytes, stopTokens.stream().mapToInt(Integer::intValue).toArray());
  }
}
