package dev.troupe.scheduler;

import dev.troupe.protocol.kv.BlockHash;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * One choice (or beam) of a request: its tokens (prompt then output), how many of them have keys
 * and values in the cache ({@link #numComputed()}), and the cache blocks that hold them.
 *
 * <p>Mutated only by its {@link Scheduler} (computed tokens, blocks) and its engine (appended
 * output tokens), on one thread.
 */
public final class Sequence {
  private final SequenceGroup group;
  private final int index;
  private final int promptLength;
  private int[] tokens;
  private int length;
  private int numComputed;
  private int[] blockTable = new int[0];
  private boolean finished;
  // Prefix cache: hashes of the full blocks so far (computed lazily, kept across preemption since
  // the tokens do not change) and how many leading blocks of the table are published.
  private List<BlockHash> blockHashes = new ArrayList<>();
  private int numPublished;

  Sequence(SequenceGroup group, int index, int[] tokens, int length, int promptLength) {
    this.group = group;
    this.index = index;
    this.tokens = Arrays.copyOf(tokens, Math.max(length + 16, 16));
    this.length = length;
    this.promptLength = promptLength;
  }

  public SequenceGroup group() {
    return group;
  }

  /** Choice (or beam slot) index within the request. */
  public int index() {
    return index;
  }

  /** Prompt plus generated tokens. */
  public int numTokens() {
    return length;
  }

  public int promptLength() {
    return promptLength;
  }

  public int numOutputTokens() {
    return length - promptLength;
  }

  /** Tokens whose keys/values are in the cache. */
  public int numComputed() {
    return numComputed;
  }

  /** All tokens have been computed, so the last logits give the next token. */
  public boolean caughtUp() {
    return numComputed == length;
  }

  public int token(int position) {
    if (position >= length) throw new IndexOutOfBoundsException(position);
    return tokens[position];
  }

  public int lastToken() {
    return tokens[length - 1];
  }

  public int[] tokens(int from, int to) {
    if (to > length) throw new IndexOutOfBoundsException(to);
    return Arrays.copyOfRange(tokens, from, to);
  }

  /** Generated tokens so far. */
  public int[] outputTokens() {
    return tokens(promptLength, length);
  }

  /** Appends one generated token (not yet computed). */
  public void append(int token) {
    if (finished) throw new IllegalStateException("sequence is finished");
    if (length == tokens.length) tokens = Arrays.copyOf(tokens, tokens.length * 2);
    tokens[length++] = token;
  }

  public int[] blockTable() {
    return blockTable.clone();
  }

  int[] blockTableRef() {
    return blockTable;
  }

  void setBlockTable(int[] table) {
    this.blockTable = table;
  }

  void setNumComputed(int n) {
    this.numComputed = n;
  }

  public boolean finished() {
    return finished;
  }

  void markFinished() {
    this.finished = true;
  }

  List<BlockHash> blockHashes() {
    return blockHashes;
  }

  /** Leading blocks of the table that are in the prefix cache (published or hit). */
  int numPublished() {
    return numPublished;
  }

  void setNumPublished(int n) {
    this.numPublished = n;
  }

  Sequence copyAs(int newIndex) {
    Sequence copy = new Sequence(group, newIndex, tokens, length, promptLength);
    copy.numComputed = numComputed;
    copy.blockTable = blockTable.clone();
    copy.blockHashes = new ArrayList<>(blockHashes);
    copy.numPublished = numPublished;
    return copy;
  }

  @Override
  public String toString() {
    return group.requestId() + "/" + index + "[" + numComputed + "/" + length + "]";
  }
}
