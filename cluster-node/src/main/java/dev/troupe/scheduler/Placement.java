package dev.troupe.scheduler;

import dev.troupe.scheduler.ScheduleResult.BlockCopy;
import dev.troupe.scheduler.ScheduleResult.ScheduledChunk;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * One request's tentative place in a step: the cached prefixes its sequences take, the blocks it
 * reserves for its next tokens and the copies its shared blocks need. Block tables and holders
 * change at once, so later reservations see them; the placement is then {@link #commit committed}
 * whole or {@link #undo undone} whole.
 */
final class Placement {
  private record Pending(Sequence seq, int n) {}

  private record Table(Sequence seq, int[] before) {}

  private record Hit(Sequence seq, int[] blocks) {}

  private final SequenceGroup group;
  private final BlockAllocator blocks;
  private final PrefixCache prefixCache;
  private final List<Pending> chunks = new ArrayList<>();
  private final List<BlockCopy> copies = new ArrayList<>();
  private final List<Integer> fresh = new ArrayList<>();
  private final List<Table> tables = new ArrayList<>();
  private final List<Hit> hits = new ArrayList<>();
  private int cachedTokens;
  private boolean outOfBlocks;

  Placement(SequenceGroup group, BlockAllocator blocks, PrefixCache prefixCache) {
    this.group = group;
    this.blocks = blocks;
    this.prefixCache = prefixCache;
  }

  /** Some sequence got tokens to run. */
  boolean placed() {
    return !outOfBlocks && !chunks.isEmpty();
  }

  /** It failed for want of free blocks (not of budget). */
  boolean outOfBlocks() {
    return outOfBlocks;
  }

  void markOutOfBlocks() {
    outOfBlocks = true;
  }

  /** Starts {@code seq}, which holds no blocks, from the cached blocks of its longest prefix. */
  void takeCachedPrefix(Sequence seq) {
    int[] hit = prefixCache.findHit(seq);
    if (seq.index() == 0 && !group.admittedOnce()) cachedTokens = hit.length * blocks.blockSize();
    if (hit.length == 0) return;
    for (int b : hit) blocks.touch(b);
    tables.add(new Table(seq, seq.blockTableRef()));
    hits.add(new Hit(seq, hit));
    seq.setBlockTable(hit.clone());
    seq.setNumComputed(hit.length * blocks.blockSize());
    seq.setNumPublished(hit.length);
  }

  /**
   * Gives {@code seq} private blocks for its next {@code n} positions (new blocks, and a copy of
   * any shared block they fall in); false, changing nothing for {@code seq}, when too few are free.
   */
  boolean reserve(Sequence seq, int n) {
    int start = seq.numComputed();
    int end = start + n;
    int[] table = seq.blockTableRef();
    int first = start / blocks.blockSize();
    int last = (end - 1) / blocks.blockSize();
    int newBlocks = Math.max(0, last + 1 - table.length);
    int shared = 0;
    for (int b = first; b <= last && b < table.length; b++)
      if (blocks.refCount(table[b]) > 1) shared++;
    if (blocks.numFree() < newBlocks + shared) return false;
    int[] updated = Arrays.copyOf(table, Math.max(table.length, last + 1));
    for (int b = first; b <= last && b < table.length; b++) {
      if (blocks.refCount(table[b]) > 1) {
        int copy = blocks.allocate();
        copies.add(new BlockCopy(table[b], copy));
        blocks.release(table[b]);
        updated[b] = copy;
      }
    }
    for (int b = table.length; b <= last; b++) {
      updated[b] = blocks.allocate();
      fresh.add(updated[b]);
    }
    tables.add(new Table(seq, table));
    seq.setBlockTable(updated);
    chunks.add(new Pending(seq, n));
    return true;
  }

  /**
   * Emits the chunks and copies, advances the computed counts as if the step ran, and settles the
   * request's cached-token count on its first admission. Returns the tokens used.
   */
  int commit(List<ScheduledChunk> out, List<BlockCopy> outCopies) {
    int used = 0;
    for (Pending p : chunks) {
      Sequence seq = p.seq();
      int start = seq.numComputed();
      int end = start + p.n();
      seq.setNumComputed(end);
      out.add(
          new ScheduledChunk(
              seq, start, seq.tokens(start, end), seq.blockTable(), end == seq.numTokens()));
      used += p.n();
    }
    outCopies.addAll(copies);
    if (!group.admittedOnce()) {
      group.setNumCachedTokens(cachedTokens);
      prefixCache.recordAdmission(group.sequences().get(0), cachedTokens);
    }
    return used;
  }

  /** Restores the block tables and the blocks' holders as they were before the placement. */
  void undo() {
    for (BlockCopy c : copies) {
      blocks.share(c.src());
      blocks.release(c.dst());
    }
    for (int b : fresh) blocks.release(b);
    for (int k = tables.size() - 1; k >= 0; k--)
      tables.get(k).seq().setBlockTable(tables.get(k).before());
    for (int k = hits.size() - 1; k >= 0; k--) {
      int[] hit = hits.get(k).blocks();
      for (int i = hit.length - 1; i >= 0; i--) blocks.release(hit[i]);
      hits.get(k).seq().setNumComputed(0);
      hits.get(k).seq().setNumPublished(0);
    }
    chunks.clear();
    copies.clear();
  }
}
