package dev.troupe.engine.tokenizer;

import dev.troupe.engine.Tokenizer.IncrementalDetokenizer;
import java.util.Arrays;

/**
 * Streaming detokenization as vLLM does it ({@code detokenize_incrementally}): keep the ids, a
 * {@code prefixOffset} a few tokens back and a {@code readOffset} where the emitted text ends;
 * decode {@code ids[prefix..read)} and {@code ids[prefix..]} and emit the difference, unless the
 * longer text ends in U+FFFD (a UTF-8 character split across byte tokens: wait for the rest).
 * Decoding a short window from a few tokens back gives decoders that look at neighbours (a leading
 * space after {@code ▁}, byte fallback) the same context as a full decode.
 *
 * <p>Emitted text is never revised. It is the text of the raw decode: like vLLM, no {@code
 * clean_up_tokenization_spaces} (that rewrite can depend on the next token). Not thread-safe: one
 * per sequence.
 */
final class PrefixOffsetDetokenizer implements IncrementalDetokenizer {

  /** vLLM's {@code INITIAL_INCREMENTAL_DETOKENIZATION_OFFSET}. */
  private static final int INITIAL_OFFSET = 5;

  private final HfTokenizer tokenizer;
  private final boolean skipSpecialTokens;
  private int[] ids;
  private int size;
  private int prefixOffset;
  private int readOffset;
  private final StringBuilder text = new StringBuilder();

  PrefixOffsetDetokenizer(HfTokenizer tokenizer, int[] promptIds, boolean skipSpecialTokens) {
    this.tokenizer = tokenizer;
    this.skipSpecialTokens = skipSpecialTokens;
    this.ids = new int[Math.max(16, promptIds.length + 16)];
    for (int id : promptIds) add(id);
    this.prefixOffset = Math.max(size - INITIAL_OFFSET, 0);
    this.readOffset = size;
  }

  @Override
  public String append(int id) {
    if (!add(id)) return "";
    String prefixText = tokenizer.rawDecode(ids, prefixOffset, readOffset, false);
    String newText = tokenizer.rawDecode(ids, prefixOffset, size, false);
    if (newText.length() <= prefixText.length() || newText.endsWith("\uFFFD")) return "";
    String delta = newText.substring(prefixText.length());
    prefixOffset = readOffset;
    readOffset = size;
    text.append(delta);
    return delta;
  }

  @Override
  public String text() {
    return text.toString();
  }

  @Override
  public String finish() {
    if (readOffset == size) return "";
    String prefixText = tokenizer.rawDecode(ids, prefixOffset, readOffset, false);
    String newText = tokenizer.rawDecode(ids, prefixOffset, size, false);
    prefixOffset = readOffset;
    readOffset = size;
    if (newText.length() <= prefixText.length()) return "";
    String delta = newText.substring(prefixText.length());
    text.append(delta);
    return delta;
  }

  /**
   * Records an id unless it is a special token being skipped; false when skipped. Ids past the
   * tokenizer's vocabulary (a model's embedding matrix is often padded, e.g. Qwen's 151,936 rows
   * for 151,669 tokens) have no text: like Hugging Face's decode, they are skipped, never an error
   * in the middle of a generation.
   */
  private boolean add(int id) {
    if (tokenizer.idToToken(id) == null) return false;
    if (skipSpecialTokens && tokenizer.specialTokenIds().contains(id)) return false;
    if (size == ids.length) ids = Arrays.copyOf(ids, size * 2);
    ids[size++] = id;
    return true;
  }
}
