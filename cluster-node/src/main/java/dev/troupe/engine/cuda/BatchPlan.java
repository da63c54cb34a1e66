package dev.troupe.engine.cuda;

import dev.troupe.engine.ModelRunner.SequenceChunk;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.IntBuffer;
import java.util.List;
import java.util.function.IntUnaryOperator;

/**
 * One step's batch flattened for the device: per token row its id, position, KV-cache slot, the
 * offset of its sequence's block table in {@link #tables}, and its LoRA adapter slot (-1 = base);
 * the rows whose logits are wanted; all packed into one int array so the step's metadata is a
 * single host-to-device copy. Built and checked on the host (pure Java, tested without a GPU).
 *
 * @param tokens per row
 * @param positions per row
 * @param slots per row: {@code table[pos / blockSize] · blockSize + pos % blockSize}
 * @param tableOffsets per row: where its chunk's block table starts in {@code tables}
 * @param tables the chunks' block tables (only the blocks they cover), back to back
 * @param adapterSlots per row: adapter slot, -1 for the base model
 * @param logitRows rows whose logits are computed, in output order
 * @param logitCounts per chunk: how many logit rows it gets (1, or its length with allLogits)
 */
record BatchPlan(
    int[] tokens,
    int[] positions,
    int[] slots,
    int[] tableOffsets,
    int[] tables,
    int[] adapterSlots,
    int[] logitRows,
    int[] logitCounts,
    boolean anyAdapter) {

  int rows() {
    return tokens.length;
  }

  /**
   * Flattens {@code batch}, checking token ids, block coverage and block ids.
   *
   * @param adapterSlot adapter id (> 0) → slot; throws for unknown ids
   */
  static BatchPlan of(
      List<SequenceChunk> batch,
      int blockSize,
      int numBlocks,
      int vocab,
      IntUnaryOperator adapterSlot) {
    int rows = 0, logits = 0, tableLen = 0;
    for (int ci = 0; ci < batch.size(); ci++) {
      SequenceChunk c = batch.get(ci);
      int end = c.startPosition() + c.tokens().length;
      int need = (end + blockSize - 1) / blockSize;
      if (c.blockTable().length < need)
        throw new IllegalArgumentException(
            "chunk "
                + ci
                + ": block table of "
                + c.blockTable().length
                + " blocks does not cover position "
                + (end - 1));
      rows += c.tokens().length;
      logits += c.allLogits() ? c.tokens().length : 1;
      tableLen += need;
    }
    int[] tokens = new int[rows], positions = new int[rows], slots = new int[rows];
    int[] tableOffsets = new int[rows], adapters = new int[rows];
    int[] tables = new int[tableLen], logitRows = new int[logits], counts = new int[batch.size()];
    boolean any = false;
    int t = 0, r = 0, tb = 0;
    for (int ci = 0; ci < batch.size(); ci++) {
      SequenceChunk c = batch.get(ci);
      int end = c.startPosition() + c.tokens().length;
      int need = (end + blockSize - 1) / blockSize;
      for (int b = 0; b < need; b++) {
        int id = c.blockTable()[b];
        if (id < 0 || id >= numBlocks)
          throw new IllegalArgumentException("block " + id + " out of [0, " + numBlocks + ")");
        tables[tb + b] = id;
      }
      int slot = c.adapterId() == 0 ? -1 : adapterSlot.applyAsInt(c.adapterId());
      any |= slot >= 0;
      for (int i = 0; i < c.tokens().length; i++, t++) {
        int id = c.tokens()[i];
        if (id < 0 || id >= vocab)
          throw new IllegalArgumentException("token id " + id + " outside the vocabulary");
        int pos = c.startPosition() + i;
        tokens[t] = id;
        positions[t] = pos;
        slots[t] = c.blockTable()[pos / blockSize] * blockSize + pos % blockSize;
        tableOffsets[t] = tb;
        adapters[t] = slot;
        if (c.allLogits() || i == c.tokens().length - 1) logitRows[r++] = t;
      }
      counts[ci] = c.allLogits() ? c.tokens().length : 1;
      tb += need;
    }
    return new BatchPlan(
        tokens, positions, slots, tableOffsets, tables, adapters, logitRows, counts, any);
  }

  /** Whether every chunk is one decode token with one logit row (a step a graph can replay). */
  boolean decodeOnly() {
    return logitRows.length == rows() && logitCounts.length == rows();
  }

  /**
   * This decode-only plan with rows added up to {@code size} (a graph's batch size): each added row
   * reads token 0 at position 0 through a one-block table {@code [scratchBlock]}, writes its K/V
   * there (a block no sequence owns), uses no adapter and has its own logit row. The sections'
   * offsets then depend on {@code size} alone; the tables section stays as long as the real rows'
   * tables (plus one entry).
   */
  BatchPlan padded(int size, int scratchBlock, int blockSize) {
    int n = rows();
    if (!decodeOnly() || size < n)
      throw new IllegalArgumentException("padding " + n + " rows to " + size);
    int[] tok = java.util.Arrays.copyOf(tokens, size),
        pos = java.util.Arrays.copyOf(positions, size);
    int[] sl = java.util.Arrays.copyOf(slots, size),
        off = java.util.Arrays.copyOf(tableOffsets, size);
    int[] ad = java.util.Arrays.copyOf(adapterSlots, size),
        lr = java.util.Arrays.copyOf(logitRows, size);
    int[] tb = java.util.Arrays.copyOf(tables, tables.length + 1);
    tb[tables.length] = scratchBlock;
    for (int r = n; r < size; r++) {
      sl[r] = scratchBlock * blockSize;
      off[r] = tables.length;
      ad[r] = -1;
      lr[r] = r;
    }
    return new BatchPlan(tok, pos, sl, off, tb, ad, lr, logitCounts, anyAdapter);
  }

  /** Offsets (in ints) of the sections in {@link #pack()}. */
  int offTokens() {
    return 0;
  }

  int offPositions() {
    return rows();
  }

  int offSlots() {
    return 2 * rows();
  }

  int offTableOffsets() {
    return 3 * rows();
  }

  int offAdapters() {
    return 4 * rows();
  }

  int offLogitRows() {
    return 5 * rows();
  }

  int offTables() {
    return 5 * rows() + logitRows.length;
  }

  int packedInts() {
    return offTables() + tables.length;
  }

  /** All sections back to back, little-endian, ready for one upload. */
  ByteBuffer pack() {
    return pack(null);
  }

  /**
   * {@link #pack()} into {@code reuse} (position 0, limit the packed bytes) when it is direct and
   * large enough, else into a new buffer with room to spare: a runner keeps the returned buffer for
   * its next step instead of a new direct buffer per step.
   */
  ByteBuffer pack(ByteBuffer reuse) {
    int bytes = packedInts() * Integer.BYTES;
    ByteBuffer b =
        reuse != null && reuse.isDirect() && reuse.capacity() >= bytes
            ? reuse
            : ByteBuffer.allocateDirect(
                reuse == null ? bytes : Math.max(bytes, 2 * reuse.capacity()));
    b.clear().limit(bytes);
    b.order(ByteOrder.LITTLE_ENDIAN);
    IntBuffer i = b.asIntBuffer();
    i.put(tokens).put(positions).put(slots).put(tableOffsets).put(adapterSlots);
    i.put(logitRows).put(tables);
    return b;
  }
}
