package dev.troupe.scheduler;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.protocol.kv.BlockHash;
import org.junit.jupiter.api.Test;

/** The block pool on its own: reference counts, the cache index and the eviction order. */
class BlockAllocatorTest {

  private static BlockHash h(int i) {
    return new BlockHash(i, i);
  }

  @Test
  void referenceCounts() {
    BlockAllocator a = new BlockAllocator(2, 16);
    int b = a.allocate();
    a.share(b);
    a.release(b);
    assertEquals(1, a.numFree());
    a.release(b);
    assertEquals(2, a.numFree());
    assertThrows(IllegalStateException.class, () -> a.release(b));
    assertThrows(IllegalStateException.class, () -> a.share(b));
    assertEquals(2, a.blocksFor(17));
  }

  @Test
  void aReleasedCachedBlockStaysFindableAndCountsAsFree() {
    BlockAllocator a = new BlockAllocator(3, 4);
    int b = a.allocate();
    assertTrue(a.cache(b, h(1)));
    assertFalse(a.cache(b, h(2)), "a block is published once");
    a.release(b);
    assertEquals(3, a.numFree());
    assertEquals(0, a.numUsed());
    assertEquals(1, a.numEvictable());
    assertEquals(b, a.lookup(h(1)));
    a.touch(b);
    assertEquals(1, a.refCount(b));
    assertEquals(0, a.numEvictable());
    assertEquals(1, a.numUsed());
    a.touch(b);
    assertEquals(2, a.refCount(b), "a held cached block gains a holder");
  }

  @Test
  void aSecondBlockWithAKnownHashIsNotPublished() {
    BlockAllocator a = new BlockAllocator(3, 4);
    int first = a.allocate();
    int second = a.allocate();
    assertTrue(a.cache(first, h(1)));
    assertFalse(a.cache(second, h(1)));
    assertNull(a.hashOf(second));
    a.release(second);
    assertEquals(0, a.numEvictable(), "the duplicate becomes empty, not cached");
  }

  @Test
  void emptyBlocksGoFirstThenTheLeastRecentlyReleasedCachedOne() {
    BlockAllocator a = new BlockAllocator(4, 4);
    int b0 = a.allocate();
    int b1 = a.allocate();
    a.cache(b0, h(0));
    a.cache(b1, h(1));
    a.release(b1); // oldest candidate
    a.release(b0);
    int e1 = a.allocate();
    int e2 = a.allocate();
    assertTrue(e1 != b0 && e1 != b1 && e2 != b0 && e2 != b1, "empty blocks are used first");
    assertEquals(2, a.numCached());
    assertEquals(b1, a.allocate(), "then the least recently released cached block");
    assertEquals(-1, a.lookup(h(1)), "it left the index");
    assertEquals(b0, a.lookup(h(0)));
    assertEquals(1, a.numEvictions());
    // Touching takes b0 out of the candidates: nothing is left to allocate.
    a.touch(b0);
    assertThrows(IllegalStateException.class, a::allocate);
  }

  @Test
  void clearingTheCacheEmptiesCandidatesAndUnpublishesHeldBlocks() {
    BlockAllocator a = new BlockAllocator(3, 4);
    int held = a.allocate();
    int loose = a.allocate();
    a.cache(held, h(1));
    a.cache(loose, h(2));
    a.release(loose);
    assertEquals(2, a.clearCache());
    assertEquals(-1, a.lookup(h(1)));
    assertEquals(-1, a.lookup(h(2)));
    assertEquals(0, a.numEvictable());
    assertEquals(2, a.numFree());
    a.release(held);
    assertEquals(3, a.numFree());
    assertEquals(0, a.numCached());
  }

  @Test
  void changesAreReportedOncePerHashWithTheirLastState() {
    BlockAllocator a = new BlockAllocator(2, 4);
    int b0 = a.allocate();
    a.cache(b0, h(0));
    a.release(b0);
    assertEquals(
        new CacheDelta(false, java.util.List.of(h(0)), java.util.List.of()), a.drainChanges());
    assertTrue(a.drainChanges().isEmpty());
    // h(0) is evicted, stored again elsewhere, and h(1) is stored then evicted: one window.
    int x = a.allocate(); // the empty block
    int y = a.allocate(); // evicts h(0)
    a.cache(x, h(1));
    a.release(x);
    a.cache(y, h(0));
    a.allocate(); // evicts h(1)
    CacheDelta d = a.drainChanges();
    assertFalse(d.replace());
    assertEquals(java.util.List.of(h(0)), d.stored());
    assertEquals(java.util.List.of(h(1)), d.removed());
  }

  @Test
  void aClearOrAnOverflowReplacesWhatTheReceiverKnew() {
    BlockAllocator a = new BlockAllocator(4, 4);
    int b0 = a.allocate();
    a.cache(b0, h(0));
    a.clearCache();
    int b1 = a.allocate();
    a.cache(b1, h(1));
    assertEquals(
        new CacheDelta(true, java.util.List.of(h(1)), java.util.List.of()), a.drainChanges());
    // More changes than the pool has blocks: the whole index instead of the diff.
    for (int i = 2; i < 12; i++) {
      int b = a.allocate();
      a.cache(b, h(i));
      a.release(b);
    }
    CacheDelta d = a.drainChanges();
    assertTrue(d.replace());
    assertEquals(a.numCached(), d.stored().size());
    assertTrue(d.removed().isEmpty());
    assertEquals(a.snapshot().stored().size(), d.stored().size());
  }
}
