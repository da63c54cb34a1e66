package dev.troupe.scheduler;

import dev.troupe.protocol.kv.BlockHash;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The KV-cache block pool: reference-counted blocks, and the prefix cache's index of full blocks by
 * {@link BlockHash} (vLLM v1's {@code BlockPool}).
 *
 * <p>A block shared by several sequences (the prompt of n choices, beams of one prefix, or a cached
 * prefix of several requests) is held until its last holder lets go; a holder about to write into a
 * shared block copies it first (copy-on-write, see {@link Scheduler}). A full block whose keys and
 * values are computed can be published under its hash ({@link #cache}). When its last holder
 * releases it, a published block stays in the index as an eviction candidate instead of becoming
 * empty, so a later request with the same prefix can take it back ({@link #touch}).
 *
 * <p>Free blocks are the empty ones plus the eviction candidates. {@link #allocate()} takes an
 * empty block while there is one and only then evicts the least recently released candidate. vLLM
 * keeps both kinds in one queue and may evict a cached block while empty ones wait behind it; using
 * the empty ones first keeps the cache longer at no cost. Callers release a sequence's blocks last
 * block first, so of one request its tail is evicted before its head (as vLLM).
 *
 * <p>Not thread-safe: owned by one scheduler.
 */
public final class BlockAllocator {
  private static final int NIL = -1;
  private final int numBlocks;
  private final int blockSize;
  private final int[] refCounts;
  private final BlockHash[] hashes;
  private final ArrayDeque<Integer> empty = new ArrayDeque<>();
  private final Map<BlockHash, Integer> cached = new HashMap<>();
  // Eviction candidates: published blocks no one holds, a doubly linked list oldest → newest.
  private final int[] prev;
  private final int[] next;
  private int lruHead = NIL;
  private int lruTail = NIL;
  private int numEvictable;
  private long evictions;
  private final CacheEventLog events;

  public BlockAllocator(int numBlocks, int blockSize) {
    if (numBlocks < 1) throw new IllegalArgumentException("numBlocks must be >= 1");
    if (blockSize < 1) throw new IllegalArgumentException("blockSize must be >= 1");
    this.numBlocks = numBlocks;
    this.blockSize = blockSize;
    this.refCounts = new int[numBlocks];
    this.hashes = new BlockHash[numBlocks];
    this.prev = new int[numBlocks];
    this.next = new int[numBlocks];
    for (int b = 0; b < numBlocks; b++) empty.addLast(b);
    this.events = new CacheEventLog(numBlocks);
  }

  public int numBlocks() {
    return numBlocks;
  }

  public int blockSize() {
    return blockSize;
  }

  /** Blocks no one holds: empty ones and cached ones that can be evicted. */
  public int numFree() {
    return empty.size() + numEvictable;
  }

  /** Blocks some sequence holds. */
  public int numUsed() {
    return numBlocks - numFree();
  }

  /** Blocks in the prefix-cache index, held or not. */
  public int numCached() {
    return cached.size();
  }

  /** Cached blocks no one holds (the eviction candidates). */
  public int numEvictable() {
    return numEvictable;
  }

  /** Cached blocks evicted to make room since start. */
  public long numEvictions() {
    return evictions;
  }

  /** Blocks needed to hold {@code tokens} positions. */
  public int blocksFor(int tokens) {
    return (tokens + blockSize - 1) / blockSize;
  }

  /**
   * Takes a free block with reference count 1: an empty one if any, else the least recently
   * released cached one, which leaves the index.
   */
  public int allocate() {
    Integer block = empty.pollFirst();
    if (block == null) {
      if (lruHead == NIL) throw new IllegalStateException("no free KV block");
      block = lruHead;
      unlink(block);
      cached.remove(hashes[block]);
      events.removed(hashes[block]);
      hashes[block] = null;
      evictions++;
    }
    refCounts[block] = 1;
    return block;
  }

  /** One more holder of a held {@code block} (a fork). */
  public void share(int block) {
    if (refCounts[block] < 1) throw new IllegalStateException("block " + block + " is free");
    refCounts[block]++;
  }

  /**
   * One more holder of a cached {@code block} found by {@link #lookup}; an eviction candidate
   * leaves the candidates.
   */
  public void touch(int block) {
    if (hashes[block] == null) throw new IllegalStateException("block " + block + " is not cached");
    if (refCounts[block] == 0) unlink(block);
    refCounts[block]++;
  }

  /**
   * One holder fewer. With its last holder a cached block becomes the newest eviction candidate,
   * any other block becomes empty.
   */
  public void release(int block) {
    if (refCounts[block] < 1)
      throw new IllegalStateException("block " + block + " is already free");
    if (--refCounts[block] > 0) return;
    if (hashes[block] != null) {
      append(block);
    } else {
      empty.addLast(block);
    }
  }

  public int refCount(int block) {
    return refCounts[block];
  }

  /** The cached block with this hash, or -1. */
  public int lookup(BlockHash hash) {
    Integer block = cached.get(hash);
    return block == null ? NIL : block;
  }

  /** The hash a block is cached under, or null. */
  public BlockHash hashOf(int block) {
    return hashes[block];
  }

  /**
   * Publishes a held, full block whose keys and values are computed. False when the block is
   * already published, or another block already holds this hash (two requests computed the same
   * prefix at once: the first stays, this one is never found and becomes empty when released).
   */
  public boolean cache(int block, BlockHash hash) {
    if (refCounts[block] < 1) throw new IllegalStateException("block " + block + " is free");
    if (hashes[block] != null || cached.containsKey(hash)) return false;
    hashes[block] = hash;
    cached.put(hash, block);
    events.stored(hash);
    return true;
  }

  /**
   * Forgets every cached block (new weights make them stale): eviction candidates become empty,
   * held blocks stay with their holders but are no longer found. Returns how many were cached.
   */
  public int clearCache() {
    int n = cached.size();
    List<Integer> candidates = new ArrayList<>(numEvictable);
    for (int b = lruHead; b != NIL; b = next[b]) candidates.add(b);
    for (int b : candidates) {
      unlink(b);
      empty.addLast(b);
    }
    Arrays.fill(hashes, null);
    cached.clear();
    events.cleared();
    return n;
  }

  /** How the cache index changed since the last call (for routers; see {@link CacheDelta}). */
  public CacheDelta drainChanges() {
    return events.drain(() -> new ArrayList<>(cached.keySet()));
  }

  /** The whole cache index, as a delta that replaces whatever a receiver knew. */
  public CacheDelta snapshot() {
    return new CacheDelta(true, new ArrayList<>(cached.keySet()), List.of());
  }

  private void append(int block) {
    prev[block] = lruTail;
    next[block] = NIL;
    if (lruTail == NIL) {
      lruHead = block;
    } else {
      next[lruTail] = block;
    }
    lruTail = block;
    numEvictable++;
  }

  private void unlink(int block) {
    if (prev[block] == NIL) {
      lruHead = next[block];
    } else {
      next[prev[block]] = next[block];
    }
    if (next[block] == NIL) {
      lruTail = prev[block];
    } else {
      prev[next[block]] = prev[block];
    }
    numEvictable--;
  }
}
