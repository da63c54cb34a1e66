package dev.troupe.engine.structured;

import dev.troupe.engine.structured.grammar.TokenVocabulary;
import dev.troupe.engine.tokenizer.HfTokenizer;
import dev.troupe.engine.tokenizer.TokenizerFixtures;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/** Real tokenizers (Qwen3, Llama 3) and their grammar vocabularies, loaded once per JVM. */
public final class StructuredFixtures {

  private static final Map<String, HfTokenizer> TOKENIZERS = new ConcurrentHashMap<>();
  private static final Map<String, TokenVocabulary> VOCABS = new ConcurrentHashMap<>();

  private StructuredFixtures() {}

  public static HfTokenizer tokenizer(String model) {
    return TOKENIZERS.computeIfAbsent(
        model, m -> HfTokenizer.load(TokenizerFixtures.dir(m).resolve("tokenizer.json"), false));
  }

  /** The vocabulary with the model's logits size and EOS ids (Qwen3: im_end, endoftext). */
  public static TokenVocabulary vocabulary(String model) {
    return VOCABS.computeIfAbsent(
        model,
        m ->
            switch (m) {
              case "qwen3" ->
                  TokenVocabularies.of(tokenizer(m), 151_936, List.of(151_645, 151_643));
              case "llama3" ->
                  TokenVocabularies.of(tokenizer(m), 128_256, List.of(128_001, 128_009));
              default -> throw new IllegalArgumentException(m);
            });
  }
}
