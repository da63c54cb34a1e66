package dev.troupe.engine;

import java.util.OptionalInt;
import java.util.Set;

/**
 * Text to token ids and back, with exactly Hugging Face {@code tokenizers}' behaviour for the
 * model's {@code tokenizer.json}. Implementations are thread-safe.
 */
public interface Tokenizer {

  /**
   * Encodes text; with {@code addSpecialTokens} the post-processor runs (e.g. BOS for Llama 3.2).
   */
  int[] encode(String text, boolean addSpecialTokens);

  /** Decodes ids, as {@code tokenizer.decode(ids, skip_special_tokens, ...)} does. */
  String decode(int[] ids, boolean skipSpecialTokens, boolean spacesBetweenSpecialTokens);

  /** The vocabulary entry of one id (e.g. {@code "Ġhello"}), or null outside the vocabulary. */
  String idToToken(int id);

  /** The id of a vocabulary entry or added token, if any. */
  OptionalInt tokenToId(String token);

  /** Size of the id space: base vocabulary plus added tokens. */
  int vocabSize();

  /** Ids of added tokens marked {@code special}. */
  Set<Integer> specialTokenIds();

  /**
   * The bytes one id contributes to decoded text, as a grammar sees it: for byte-level BPE the
   * vocabulary entry mapped back through GPT-2's byte alphabet, for SentencePiece-style
   * vocabularies {@code ▁} as a space and {@code <0xNN>} as that byte, for added tokens their UTF-8
   * content. Null outside the vocabulary. The default decodes the id on its own, which is exact
   * only for vocabularies whose tokens are whole characters.
   */
  default byte[] tokenBytes(int id) {
    if (id < 0 || id >= vocabSize()) return null;
    return decode(new int[] {id}, false, false).getBytes(java.nio.charset.StandardCharsets.UTF_8);
  }

  /** Streaming detokenizer that emits only complete, final text for ids appended one by one. */
  IncrementalDetokenizer newDetokenizer(
      int[] promptIds, boolean skipSpecialTokens, boolean spacesBetweenSpecialTokens);

  /** Text of ids appended one at a time; never emits half a UTF-8 character or rewrites text. */
  interface IncrementalDetokenizer {
    /** Appends one generated id and returns the newly final text (possibly empty). */
    String append(int id);

    /** Everything emitted so far. */
    String text();

    /** Flushes what is held back (e.g. an incomplete character at the end, as U+FFFD). */
    String finish();
  }
}
