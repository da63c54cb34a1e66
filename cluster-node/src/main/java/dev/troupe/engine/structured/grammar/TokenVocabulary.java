package dev.troupe.engine.structured.grammar;

import java.util.Arrays;

/**
 * A model's vocabulary as the grammar engine sees it: the bytes each token id adds to the output,
 * sorted into a byte trie (kept in preorder arrays, so a walk is a linear scan that can skip whole
 * subtrees), plus the stop tokens that end a choice. Ids without bytes (special tokens, padding
 * beyond the tokenizer's vocabulary, empty tokens) are never allowed by a grammar; stop tokens are
 * allowed exactly when the grammar can end. Immutable; built once per tokenizer and shared by every
 * grammar compiled for it.
 */
public final class TokenVocabulary {

  private final int size; // the model's logits row length
  private final byte[][] bytes; // per id, null = never allowed
  private final int[] stopTokens;
  private final long[] universe; // ids a grammar may ever allow (excluding stop tokens)
  private final int universeCount;

  // trie in preorder
  final int nodes;
  final byte[] label;
  final short[] depth;
  final int[] subtreeEnd;
  final int[] tokBefore; // tokens attached to earlier nodes (index into sorted), length nodes+1
  final short[] ownTokens; // tokens attached to this node
  final int[] sorted; // token ids in byte order

  /**
   * @param size the model's logits row length (at least the number of byte entries)
   * @param tokenBytes per token id the bytes it decodes to, or null for ids a grammar must never
   *     produce (special tokens); ids at or beyond the array's length have none either
   * @param stopTokens ids that end the output (EOS and the model's extra EOS ids)
   */
  public TokenVocabulary(int size, byte[][] tokenBytes, int[] stopTokens) {
    if (size < tokenBytes.length) throw new IllegalArgumentException("size below the vocabulary");
    this.size = size;
    this.bytes = new byte[tokenBytes.length][];
    this.stopTokens =
        Arrays.stream(stopTokens).filter(t -> t >= 0 && t < size).distinct().sorted().toArray();
    this.universe = new long[words(size)];
    int count = 0;
    Integer[] ids = new Integer[tokenBytes.length];
    int n = 0;
    for (int id = 0; id < tokenBytes.length; id++) {
      byte[] b = tokenBytes[id];
      if (b == null || b.length == 0 || Arrays.binarySearch(this.stopTokens, id) >= 0) continue;
      if (b.length > Short.MAX_VALUE) continue;
      bytes[id] = b.clone();
      universe[id >>> 6] |= 1L << id;
      count++;
      ids[n++] = id;
    }
    this.universeCount = count;
    Integer[] order = Arrays.copyOf(ids, n);
    Arrays.sort(order, (x, y) -> Arrays.compareUnsigned(bytes[x], bytes[y]));
    this.sorted = new int[n];
    for (int i = 0; i < n; i++) sorted[i] = order[i];

    // preorder trie from the sorted list: a new node for every byte past the common prefix
    int cap = 1024;
    byte[] lab = new byte[cap];
    short[] dep = new short[cap];
    int[] end = new int[cap];
    int[] before = new int[cap + 1];
    short[] own = new short[cap];
    int[] pathNode = new int[Short.MAX_VALUE + 1];
    int pathLen = 0;
    int count2 = 0;
    byte[] prev = new byte[0];
    for (int i = 0; i < n; i++) {
      byte[] cur = bytes[sorted[i]];
      int l = 0;
      while (l < prev.length && l < cur.length && prev[l] == cur[l]) l++;
      while (pathLen > l) end[pathNode[--pathLen]] = count2;
      for (int d = l; d < cur.length; d++) {
        if (count2 == cap) {
          cap *= 2;
          lab = Arrays.copyOf(lab, cap);
          dep = Arrays.copyOf(dep, cap);
          end = Arrays.copyOf(end, cap);
          before = Arrays.copyOf(before, cap + 1);
          own = Arrays.copyOf(own, cap);
        }
        lab[count2] = cur[d];
        dep[count2] = (short) (d + 1);
        before[count2] = i;
        pathNode[pathLen++] = count2;
        count2++;
      }
      own[pathNode[cur.length - 1]]++;
      prev = cur;
    }
    while (pathLen > 0) end[pathNode[--pathLen]] = count2;
    this.nodes = count2;
    this.label = Arrays.copyOf(lab, count2);
    this.depth = Arrays.copyOf(dep, count2);
    this.subtreeEnd = Arrays.copyOf(end, count2);
    this.tokBefore = Arrays.copyOf(before, count2 + 1);
    this.tokBefore[count2] = n;
    this.ownTokens = Arrays.copyOf(own, count2);
  }

  static int words(int size) {
    return (size + 63) >>> 6;
  }

  /** The model's logits row length; masks have {@code ceil(size / 64)} words. */
  public int size() {
    return size;
  }

  /** The bytes of a token, or null when no grammar may produce it. */
  public byte[] bytes(int id) {
    return id >= 0 && id < bytes.length ? bytes[id] : null;
  }

  public int[] stopTokens() {
    return stopTokens.clone();
  }

  boolean isStop(int id) {
    return Arrays.binarySearch(stopTokens, id) >= 0;
  }

  int[] stops() {
    return stopTokens;
  }

  long[] universe() {
    return universe;
  }

  int universeCount() {
    return universeCount;
  }

  /** Tokens with bytes, i.e. ids any grammar could allow (stop tokens excluded). */
  public int tokensWithBytes() {
    return sorted.length;
  }
}
