package dev.troupe.engine.cpu;

import dev.troupe.engine.ModelRunner.SequenceChunk;
import java.util.List;
import java.util.function.IntFunction;

/** One forward's batch flattened to rows: per token its id, position, cache slot and adapter. */
final class Step {
  int[] tokens;
  int[] positions;
  int[] slots;
  int[] chunkStart; // per chunk, first row
  int[][] blockTables; // per chunk
  int[] chunkOf; // per row
  Lora[] adapters; // per row, null = base
  boolean anyAdapter;
  int[] logitRows;

  /**
   * Validates and flattens {@code batch}; {@code adapter} resolves a chunk's adapter id (it throws
   * for an unknown one).
   */
  static Step of(
      List<SequenceChunk> batch,
      int vocab,
      int blockSize,
      int numBlocks,
      IntFunction<Lora> adapter) {
    int T = 0, R = 0;
    for (SequenceChunk c : batch) {
      T += c.tokens().length;
      R += c.allLogits() ? c.tokens().length : 1;
    }
    Step s = new Step();
    s.tokens = new int[T];
    s.positions = new int[T];
    s.slots = new int[T];
    s.chunkOf = new int[T];
    s.adapters = new Lora[T];
    s.chunkStart = new int[batch.size()];
    s.blockTables = new int[batch.size()][];
    s.logitRows = new int[R];
    int t = 0, r = 0;
    for (int ci = 0; ci < batch.size(); ci++) {
      SequenceChunk c = batch.get(ci);
      int end = c.startPosition() + c.tokens().length;
      if ((long) c.blockTable().length * blockSize < end)
        throw new IllegalArgumentException(
            "chunk "
                + ci
                + ": block table of "
                + c.blockTable().length
                + " blocks does not cover position "
                + (end - 1));
      for (int b = 0, nb = (end + blockSize - 1) / blockSize; b < nb; b++) {
        int block = c.blockTable()[b];
        if (block < 0 || block >= numBlocks)
          throw new IllegalArgumentException("block " + block + " out of [0, " + numBlocks + ")");
      }
      Lora a = c.adapterId() == 0 ? null : adapter.apply(c.adapterId());
      s.anyAdapter |= a != null;
      s.chunkStart[ci] = t;
      s.blockTables[ci] = c.blockTable();
      for (int i = 0; i < c.tokens().length; i++, t++) {
        int id = c.tokens()[i];
        if (id < 0 || id >= vocab)
          throw new IllegalArgumentException("token id " + id + " outside the vocabulary");
        int pos = c.startPosition() + i;
        s.tokens[t] = id;
        s.positions[t] = pos;
        s.slots[t] = c.blockTable()[pos / blockSize] * blockSize + pos % blockSize;
        s.chunkOf[t] = ci;
        s.adapters[t] = a;
        if (c.allLogits() || i == c.tokens().length - 1) s.logitRows[r++] = t;
      }
    }
    return s;
  }
}
