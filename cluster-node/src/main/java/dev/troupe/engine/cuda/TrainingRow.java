package dev.troupe.engine.cuda;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;

/**
 * One packed training row laid out for the device, checked first: per position the token, its RoPE
 * position, its cache slot (itself: the row is its own KV cache), where its segment starts; the
 * targets to score (positions whose next token gets a log-probability) and those tokens; and, for a
 * training step, the loss inputs with each target's history as a run of positions. Uploaded as one
 * int array and one double array ({@link #ints()}, {@link #doubles()}).
 *
 * <p>Segments must be contiguous (the packer lays histories end to end), and so must the positions
 * of one history id: attention and the sequence-level ratios work on position ranges.
 */
final class TrainingRow {
  final int length;
  final int[] targets;
  private final int[] tokens, positions, segStart, targetTokens;
  private int[] mask, runStart, runEnd;
  private double[] old, advantages, weights;

  private TrainingRow(int[] tokens, int[] positions, int[] segStart, int[] targets) {
    this.length = tokens.length;
    this.tokens = tokens;
    this.positions = positions;
    this.segStart = segStart;
    this.targets = targets;
    this.targetTokens = new int[targets.length];
    for (int i = 0; i < targets.length; i++)
      targetTokens[i] = targets[i] + 1 < length ? tokens[targets[i] + 1] : 0;
  }

  /**
   * @param needed positions whose next token is scored; null = every position but the last
   * @param maxPosition RoPE positions must be below this
   */
  static TrainingRow of(
      int[] tokens, int[] positions, int[] segments, boolean[] needed, int vocab, int maxPosition) {
    int n = tokens.length;
    if (n == 0) throw new IllegalArgumentException("empty row");
    if (positions.length != n || segments.length != n || (needed != null && needed.length != n))
      throw new IllegalArgumentException("tokens, positions, segments and needed differ in length");
    for (int t = 0; t < n; t++) {
      if (tokens[t] < 0 || tokens[t] >= vocab)
        throw new IllegalArgumentException(
            "token id " + tokens[t] + " is outside the model's vocabulary of " + vocab);
      if (positions[t] < 0 || positions[t] >= maxPosition)
        throw new IllegalArgumentException(
            "position " + positions[t] + " outside [0, " + maxPosition + ")");
    }
    int[] start = new int[n];
    runs(segments, start, new int[n], "segment");
    int[] buf = new int[Math.max(0, n - 1)];
    int k = 0;
    for (int t = 0; t + 1 < n; t++) if (needed == null || needed[t]) buf[k++] = t;
    return new TrainingRow(tokens, positions, start, Arrays.copyOf(buf, k));
  }

  /** A row that scores only its last position (its whole next-token distribution is read). */
  static TrainingRow lastPosition(int[] tokens, int vocab, int maxPosition) {
    int n = tokens.length;
    int[] positions = new int[n];
    for (int i = 0; i < n; i++) positions[i] = i;
    TrainingRow r = of(tokens, positions, new int[n], new boolean[n], vocab, maxPosition);
    return new TrainingRow(tokens, positions, r.segStart, new int[] {n - 1});
  }

  /** Adds a training step's loss inputs (per target position, as in the packed row). */
  TrainingRow withLoss(
      boolean[] mask, double[] old, double[] advantages, double[] weights, int[] historyIds) {
    if (mask.length != length
        || old.length != length
        || advantages.length != length
        || weights.length != length
        || historyIds.length != length)
      throw new IllegalArgumentException("loss arrays differ in length from the row");
    this.mask = new int[length];
    for (int t = 0; t < length; t++) this.mask[t] = mask[t] ? 1 : 0;
    runStart = new int[length];
    runEnd = new int[length];
    runs(historyIds, runStart, runEnd, "history");
    this.old = old;
    this.advantages = advantages;
    this.weights = weights;
    return this;
  }

  boolean hasLoss() {
    return mask != null;
  }

  /** Fills the bounds of each position's run of equal ids; an id may not come back later. */
  private static void runs(int[] ids, int[] start, int[] end, String what) {
    int n = ids.length;
    Set<Integer> closed = new HashSet<>();
    for (int t = 0; t < n; ) {
      int e = t;
      while (e < n && ids[e] == ids[t]) e++;
      if (!closed.add(ids[t]))
        throw new IllegalArgumentException(
            what + " " + ids[t] + " is not contiguous in the row (positions " + t + "..)");
      for (int u = t; u < e; u++) {
        start[u] = t;
        end[u] = e;
      }
      t = e;
    }
  }

  // int layout: tokens, positions, slots, seg start, targets, target tokens, then for a
  // step mask, run start, run end and the loss's {T, level, ppo, mask_prob_ratio}
  long offTokens() {
    return 0;
  }

  long offPositions() {
    return length;
  }

  long offSlots() {
    return 2L * length;
  }

  long offSegStart() {
    return 3L * length;
  }

  long offTargets() {
    return 4L * length;
  }

  long offTargetTokens() {
    return 4L * length + targets.length;
  }

  long offMask() {
    return 4L * length + 2L * targets.length;
  }

  long offRunStart() {
    return offMask() + length;
  }

  long offRunEnd() {
    return offMask() + 2L * length;
  }

  long offLossInts() {
    return offMask() + 3L * length;
  }

  /**
   * Device bytes a trainer's metadata buffers may hold for rows of up to {@code rows} tokens: the
   * int and double arrays of the longest row with its loss, twice (a buffer grows to at least twice
   * its size).
   */
  static long metaBytes(int rows) {
    return 2 * ((9L * rows + 4) * 4 + (3L * rows + 4) * 8);
  }

  int intCount() {
    return (int) (hasLoss() ? offLossInts() + 4 : offMask());
  }

  /** The int array ({@code lossInts}: level, ppo, mask_prob_ratio; only with a loss). */
  ByteBuffer ints(int[] lossInts) {
    ByteBuffer b = ByteBuffer.allocateDirect(intCount() * 4).order(ByteOrder.LITTLE_ENDIAN);
    b.asIntBuffer().put(tokens).put(positions);
    for (int t = 0; t < length; t++) b.putInt((int) (offSlots() + t) * 4, t);
    b.position((int) offSegStart() * 4);
    b.asIntBuffer().put(segStart).put(targets).put(targetTokens);
    if (hasLoss()) {
      b.position((int) offMask() * 4);
      b.asIntBuffer().put(mask).put(runStart).put(runEnd).put(length).put(lossInts);
    }
    return b.clear();
  }

  // double layout (steps only): old logprobs, advantages, weights, then {lo, hi, cap, τ}
  long offOld() {
    return 0;
  }

  long offAdvantages() {
    return length;
  }

  long offWeights() {
    return 2L * length;
  }

  long offLossDoubles() {
    return 3L * length;
  }

  ByteBuffer doubles(double[] lossDoubles) {
    ByteBuffer b = ByteBuffer.allocateDirect((3 * length + 4) * 8).order(ByteOrder.LITTLE_ENDIAN);
    b.asDoubleBuffer().put(old).put(advantages).put(weights).put(lossDoubles);
    return b.clear();
  }
}
