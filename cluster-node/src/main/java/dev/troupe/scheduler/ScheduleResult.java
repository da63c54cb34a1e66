package dev.troupe.scheduler;

import java.util.List;

/**
 * What one engine step runs.
 *
 * @param step the scheduler's step counter
 * @param chunks sequence pieces to run, in batch order
 * @param copies block copies to perform before the forward pass (copy-on-write)
 * @param preempted requests sent back to the waiting queue this step (their cache is dropped and
 *     recomputed when they resume)
 * @param outOfMemory requests removed because they cannot fit the KV cache even alone; the engine
 *     finishes them
 */
public record ScheduleResult(
    long step,
    List<ScheduledChunk> chunks,
    List<BlockCopy> copies,
    List<SequenceGroup> preempted,
    List<SequenceGroup> outOfMemory) {

  public ScheduleResult {
    chunks = List.copyOf(chunks);
    copies = List.copyOf(copies);
    preempted = List.copyOf(preempted);
    outOfMemory = List.copyOf(outOfMemory);
  }

  public boolean isEmpty() {
    return chunks.isEmpty();
  }

  /** Total tokens run this step. */
  public int numTokens() {
    int n = 0;
    for (ScheduledChunk c : chunks) n += c.tokens().length;
    return n;
  }

  /**
   * A piece of one sequence.
   *
   * @param start position of {@code tokens[0]}
   * @param blockTable the sequence's blocks, covering every position up to start + tokens.length
   * @param last the chunk reaches the sequence's end, so its last logits give the next token
   */
  public record ScheduledChunk(
      Sequence sequence, int start, int[] tokens, int[] blockTable, boolean last) {}

  /** Copy block {@code src}'s cached keys/values into {@code dst}. */
  public record BlockCopy(int src, int dst) {}
}
