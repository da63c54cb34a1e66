package dev.troupe.engine;

import java.util.List;

/**
 * One model's forward pass over a batch of sequence chunks with a paged KV cache. The only door to
 * the tensor library: implementations live in {@code engine.nd4j}; callers see plain Java arrays.
 *
 * <p>Thread: a runner is confined to the thread of its owner (the ModelWorker's dispatcher); it is
 * not thread-safe. The KV cache has {@link #numBlocks()} blocks of {@link #blockSize()} positions;
 * which sequence owns which block is the caller's business (a block table per sequence).
 */
public interface ModelRunner extends AutoCloseable {

  ModelConfig config();

  int blockSize();

  int numBlocks();

  /**
   * Runs one step. Each chunk appends {@code tokens} at positions {@code startPosition ..} of its
   * sequence, writing their keys/values into its blocks and attending to everything before. Chunks
   * may be prefill chunks of any length or single decode tokens, mixed freely in one batch.
   *
   * @return per chunk, in order: logits of the last token ({@code [1][vocab]}) or, when the chunk
   *     asks for all logits, of every token ({@code [tokens.length][vocab]})
   */
  List<float[][]> forward(List<SequenceChunk> batch);

  /** Copies the cached keys/values of block {@code src} into block {@code dst} (copy-on-write). */
  void copyBlock(int src, int dst);

  @Override
  void close();

  /**
   * A piece of one sequence to run.
   *
   * @param tokens the new token ids
   * @param startPosition position of {@code tokens[0]} in the sequence (= tokens already cached)
   * @param blockTable KV block ids of the sequence, covering at least startPosition + tokens.length
   * @param allLogits return logits for every token (prompt logprobs) instead of only the last
   */
  record SequenceChunk(int[] tokens, int startPosition, int[] blockTable, boolean allLogits) {
    public SequenceChunk {
      if (tokens.length == 0) throw new IllegalArgumentException("empty chunk");
      if (startPosition < 0) throw new IllegalArgumentException("negative start position");
    }
  }
}
