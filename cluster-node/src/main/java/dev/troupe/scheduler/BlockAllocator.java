package dev.troupe.scheduler;

import java.util.ArrayDeque;

/**
 * Reference-counted KV-cache blocks. A block shared by several sequences (the prompt of n choices,
 * or beams of one prefix) is freed when its last holder lets go; a holder about to write into a
 * shared block copies it first (copy-on-write, see {@link Scheduler}).
 *
 * <p>Not thread-safe: owned by one scheduler.
 */
public final class BlockAllocator {
  private final int numBlocks;
  private final int blockSize;
  private final int[] refCounts;
  private final ArrayDeque<Integer> free = new ArrayDeque<>();

  public BlockAllocator(int numBlocks, int blockSize) {
    if (numBlocks < 1) throw new IllegalArgumentException("numBlocks must be >= 1");
    if (blockSize < 1) throw new IllegalArgumentException("blockSize must be >= 1");
    this.numBlocks = numBlocks;
    this.blockSize = blockSize;
    this.refCounts = new int[numBlocks];
    for (int b = 0; b < numBlocks; b++) free.addLast(b);
  }

  public int numBlocks() {
    return numBlocks;
  }

  public int blockSize() {
    return blockSize;
  }

  public int numFree() {
    return free.size();
  }

  public int numUsed() {
    return numBlocks - free.size();
  }

  /** Blocks needed to hold {@code tokens} positions. */
  public int blocksFor(int tokens) {
    return (tokens + blockSize - 1) / blockSize;
  }

  /** Takes a free block with reference count 1. */
  public int allocate() {
    Integer block = free.pollFirst();
    if (block == null) throw new IllegalStateException("no free KV block");
    refCounts[block] = 1;
    return block;
  }

  /** One more holder of {@code block}. */
  public void share(int block) {
    if (refCounts[block] < 1) throw new IllegalStateException("block " + block + " is free");
    refCounts[block]++;
  }

  /** One holder fewer; the block returns to the free list with its last holder. */
  public void release(int block) {
    if (refCounts[block] < 1)
      throw new IllegalStateException("block " + block + " is already free");
    if (--refCounts[block] == 0) free.addLast(block);
  }

  public int refCount(int block) {
    return refCounts[block];
  }
}
