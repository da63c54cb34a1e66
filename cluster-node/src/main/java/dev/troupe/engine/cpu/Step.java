package dev.troupe.engine.cpu;

import dev.troupe.engine.ModelRunner.SequenceChunk;
import java.util.List;
import java.util.function.IntFunction;

/**
 * One forward's batch flattened to rows: per token its id, position, cache slot and adapter.
 *
 * <p>With {@code splitPrompt} (the runner computes prompt rows on oneDNN) the rows are ordered in
 * two ranges: first every chunk's generated tokens ({@code [0, fp32Rows)}, the kernels' path, which
 * {@link Forward} may send to oneDNN with the rest when they are many), then every chunk's prompt
 * tokens ({@code [fp32Rows, T)}); a chunk holding both (a resumed request's re-prefill) becomes two
 * pieces, each attending over the cache as a chunk of its own. Without it the rows keep the batch's
 * order and all are FP32 rows.
 */
final class Step {
  int[] tokens;
  int[] positions;
  int[] slots;
  int[] chunkStart; // per piece, first row
  int[][] blockTables; // per piece
  int[] chunkOf; // per row, its piece
  Lora[] adapters; // per row, null = base
  boolean anyAdapter;
  int fp32Rows; // rows [0, fp32Rows) take the kernels' path, the rest oneDNN
  int generatedRows; // with splitPrompt, rows [0, generatedRows) are generated tokens; else 0
  int[] logitRows; // per logits row (in the batch's order), its row

  /**
   * Validates and flattens {@code batch}; {@code adapter} resolves a chunk's adapter id (it throws
   * for an unknown one).
   */
  static Step of(
      List<SequenceChunk> batch,
      int vocab,
      int blockSize,
      int numBlocks,
      IntFunction<Lora> adapter,
      boolean splitPrompt) {
    int T = 0, R = 0, G = 0, pieces = 0;
    for (SequenceChunk c : batch) {
      int n = c.tokens().length, p = splitPrompt ? c.promptTokens() : 0;
      T += n;
      G += n - p;
      R += c.allLogits() ? n : 1;
      pieces += (p > 0 ? 1 : 0) + (p < n ? 1 : 0);
    }
    Step s = new Step();
    s.tokens = new int[T];
    s.positions = new int[T];
    s.slots = new int[T];
    s.chunkOf = new int[T];
    s.adapters = new Lora[T];
    s.chunkStart = new int[pieces];
    s.blockTables = new int[pieces][];
    s.logitRows = new int[R];
    s.fp32Rows = G;
    s.generatedRows = splitPrompt ? G : 0;
    Lora[] lora = new Lora[batch.size()];
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
      for (int id : c.tokens())
        if (id < 0 || id >= vocab)
          throw new IllegalArgumentException("token id " + id + " outside the vocabulary");
      lora[ci] = c.adapterId() == 0 ? null : adapter.apply(c.adapterId());
      s.anyAdapter |= lora[ci] != null;
    }
    // generated pieces from row 0, prompt pieces from row G, so pieces are numbered in row order;
    // rowOf[ci][i] = the row of chunk ci's token i
    int[][] rowOf = new int[batch.size()][];
    int gen = 0, prompt = G, piece = 0;
    for (int pass = 0; pass < 2; pass++)
      for (int ci = 0; ci < batch.size(); ci++) {
        SequenceChunk c = batch.get(ci);
        int n = c.tokens().length, p = splitPrompt ? c.promptTokens() : 0;
        if (rowOf[ci] == null) rowOf[ci] = new int[n];
        // pass 0: the generated part [p, n); pass 1: the prompt part [0, p)
        int from = pass == 0 ? p : 0, to = pass == 0 ? n : p;
        if (from == to) continue;
        int t = pass == 0 ? gen : prompt;
        s.chunkStart[piece] = t;
        s.blockTables[piece] = c.blockTable();
        for (int i = from; i < to; i++, t++) {
          int pos = c.startPosition() + i;
          s.tokens[t] = c.tokens()[i];
          s.positions[t] = pos;
          s.slots[t] = c.blockTable()[pos / blockSize] * blockSize + pos % blockSize;
          s.chunkOf[t] = piece;
          s.adapters[t] = lora[ci];
          rowOf[ci][i] = t;
        }
        piece++;
        if (pass == 0) gen = t;
        else prompt = t;
      }
    int r = 0;
    for (int ci = 0; ci < batch.size(); ci++) {
      SequenceChunk c = batch.get(ci);
      int n = c.tokens().length;
      for (int i = c.allLogits() ? 0 : n - 1; i < n; i++) s.logitRows[r++] = rowOf[ci][i];
    }
    return s;
  }
}
