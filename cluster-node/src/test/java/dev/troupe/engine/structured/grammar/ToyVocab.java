package dev.troupe.engine.structured.grammar;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/** A small vocabulary of literal strings for engine tests; the last id is the stop token. */
final class ToyVocab {
  final List<String> tokens;
  final TokenVocabulary vocabulary;
  final int stop;

  ToyVocab(List<String> tokens) {
    this.tokens = List.copyOf(tokens);
    byte[][] bytes = new byte[tokens.size() + 1][];
    for (int i = 0; i < tokens.size(); i++)
      bytes[i] = tokens.get(i).getBytes(StandardCharsets.UTF_8);
    this.stop = tokens.size();
    // a few ids beyond the tokenizer, as a model's padded logits row has
    this.vocabulary = new TokenVocabulary(tokens.size() + 5, bytes, new int[] {stop});
  }

  /** Every printable ASCII character plus the given multi-character tokens. */
  static ToyVocab asciiPlus(String... extra) {
    List<String> t = new ArrayList<>();
    for (char c = 32; c < 127; c++) t.add(String.valueOf(c));
    t.add("\n");
    t.addAll(List.of(extra));
    return new ToyVocab(t);
  }

  String text(List<Integer> ids) {
    StringBuilder sb = new StringBuilder();
    for (int id : ids) if (id != stop) sb.append(tokens.get(id));
    return sb.toString();
  }
}
