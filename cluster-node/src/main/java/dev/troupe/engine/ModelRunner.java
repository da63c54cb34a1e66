package dev.troupe.engine;

import java.util.List;

/**
 * One model's forward pass over a batch of sequence chunks with a paged KV cache: the seam between
 * the engine and a compute backend (the CPU runner in {@code engine.cpu}, opened by {@code
 * engine.runner.ModelRunners}); callers see plain Java arrays.
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

  /** How {@link #exportBlocks} lays out a block; equal layouts exchange blocks. */
  default KvLayout kvLayout() {
    throw new UnsupportedOperationException("this runner does not export KV blocks");
  }

  /**
   * The cached keys and values of {@code blocks}, in order, as {@link #kvLayout()} lays them out
   * ({@link KvLayout#blockBytes()} per block): for another replica to {@link #importBlocks} them.
   */
  default byte[] exportBlocks(int[] blocks) {
    throw new UnsupportedOperationException("this runner does not export KV blocks");
  }

  /**
   * Writes {@code data} (as {@link #exportBlocks} returned it on a runner of the same layout) into
   * {@code blocks}, in order; their keys and values are then as if computed here.
   *
   * @throws IllegalArgumentException when {@code data} is not {@code blocks.length} blocks long
   */
  default void importBlocks(int[] blocks, byte[] data) {
    throw new UnsupportedOperationException("this runner does not import KV blocks");
  }

  /**
   * Makes a LoRA adapter available to chunks naming {@code id} (replacing any adapter with that id
   * for later steps). Adapters are validated against the model's layer shapes here.
   *
   * @param id a positive id; 0 is the base model
   */
  default void registerAdapter(int id, LoraAdapter adapter) {
    throw new UnsupportedOperationException("this runner does not serve LoRA adapters");
  }

  /** Forgets adapter {@code id}; chunks naming it afterwards fail. */
  default void removeAdapter(int id) {
    throw new UnsupportedOperationException("this runner does not serve LoRA adapters");
  }

  /** Where this runner computes, for the cluster view: the CPU unless it says otherwise. */
  default DeviceInfo deviceInfo() {
    return DeviceInfo.cpu();
  }

  @Override
  void close();

  /**
   * A piece of one sequence to run.
   *
   * @param tokens the new token ids
   * @param startPosition position of {@code tokens[0]} in the sequence (= tokens already cached)
   * @param blockTable KV block ids of the sequence, covering at least startPosition + tokens.length
   * @param allLogits return logits for every token (prompt logprobs) instead of only the last
   * @param adapterId the LoRA adapter this chunk runs with ({@link #registerAdapter}); 0 = base
   *     model. Per chunk, so a running request keeps the adapter it started with.
   * @param promptLength the sequence's prompt length: its tokens at positions below it are prompt
   *     tokens, the others generated ones (decode steps, a resumed request's replayed tokens). A
   *     runner may compute the two kinds on different paths (the CPU runner's BF16 prompt rows on
   *     oneDNN), each the same whatever else the step holds; 0 = every token counts as generated.
   */
  record SequenceChunk(
      int[] tokens,
      int startPosition,
      int[] blockTable,
      boolean allLogits,
      int adapterId,
      int promptLength) {
    public SequenceChunk {
      if (tokens.length == 0) throw new IllegalArgumentException("empty chunk");
      if (startPosition < 0) throw new IllegalArgumentException("negative start position");
      if (adapterId < 0) throw new IllegalArgumentException("negative adapter id");
      if (promptLength < 0) throw new IllegalArgumentException("negative prompt length");
    }

    /** A chunk whose tokens all count as generated ({@code promptLength} 0). */
    public SequenceChunk(
        int[] tokens, int startPosition, int[] blockTable, boolean allLogits, int adapterId) {
      this(tokens, startPosition, blockTable, allLogits, adapterId, 0);
    }

    /** A chunk on the base model whose tokens all count as generated. */
    public SequenceChunk(int[] tokens, int startPosition, int[] blockTable, boolean allLogits) {
      this(tokens, startPosition, blockTable, allLogits, 0, 0);
    }

    /** A chunk on the base model that is all prompt (up to its last token). */
    public static SequenceChunk prompt(
        int[] tokens, int startPosition, int[] blockTable, boolean allLogits) {
      return new SequenceChunk(
          tokens, startPosition, blockTable, allLogits, 0, startPosition + tokens.length);
    }

    /** How many of this chunk's tokens, from the first, are prompt tokens. */
    public int promptTokens() {
      return Math.max(0, Math.min(tokens.length, promptLength - startPosition));
    }
  }
}
