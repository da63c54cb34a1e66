package dev.troupe.scheduler;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import org.junit.jupiter.api.Test;

class BlockHasherTest {
  private final BlockHasher hasher = new BlockHasher();

  /**
   * Golden values from Python's hashlib over the documented encoding (tag "tkv1", parent, count,
   * big-endian tokens, presence-byte + length-prefixed UTF-8 adapter and salt): every node must
   * compute the same hashes, so the encoding may not drift.
   */
  @Test
  void matchesTheDocumentedEncoding() {
    int[] tokens = {1, 2, 3, 4, 5, 6, 7, 8};
    List<BlockHash> chain = hasher.chain(tokens, 4, CacheScope.BASE);
    assertEquals("068236e4f61b7b0dac8bbb3186a3ebbf", chain.get(0).hex());
    assertEquals("34458378bcbf93be8a58a2e0fec08401", chain.get(1).hex());
    assertEquals(
        "873f2af7666a3d9ed8f7a5c25b9d7a75",
        hasher.hash(BlockHash.NONE, tokens, 0, 4, new CacheScope(null, "salt", true), true).hex());
    assertEquals(
        "cf85e0a3a1d8ebe73a816a65a0eb22f8",
        hasher
            .hash(BlockHash.NONE, tokens, 0, 4, new CacheScope("m:step3", null, true), true)
            .hex());
    assertEquals(
        "5e348f8e93526168958823f041d9b823",
        hasher
            .hash(
                BlockHash.NONE,
                new int[] {-1, 70000, 3, 4},
                0,
                4,
                new CacheScope("é", null, true),
                true)
            .hex());
  }

  @Test
  void theSaltEntersTheFirstBlockAndReachesTheRestThroughTheChain() {
    int[] tokens = {1, 2, 3, 4, 5, 6, 7, 8};
    CacheScope salted = new CacheScope(null, "tenant-a", true);
    List<BlockHash> plain = hasher.chain(tokens, 4, CacheScope.BASE);
    List<BlockHash> withSalt = hasher.chain(tokens, 4, salted);
    assertNotEquals(plain.get(0), withSalt.get(0));
    assertNotEquals(plain.get(1), withSalt.get(1));
    // A later block hashes the salt only through its parent.
    assertEquals(withSalt.get(1), hasher.hash(withSalt.get(0), tokens, 4, 8, salted, false));
    assertEquals(
        withSalt.get(1), hasher.hash(withSalt.get(0), tokens, 4, 8, CacheScope.BASE, false));
    assertNotEquals(
        withSalt.get(0), hasher.chain(tokens, 4, new CacheScope(null, "tenant-b", true)).get(0));
    // Reading the cache or not does not change what a block is.
    assertEquals(withSalt, hasher.chain(tokens, 4, new CacheScope(null, "tenant-a", false)));
  }

  @Test
  void adaptersSeparateEveryBlock() {
    int[] tokens = {1, 2, 3, 4, 5, 6, 7, 8};
    CacheScope a = new CacheScope("m:step1", null, true);
    CacheScope b = new CacheScope("m:step2", null, true);
    BlockHash parent = hasher.chain(tokens, 4, a).get(0);
    assertNotEquals(
        hasher.hash(parent, tokens, 4, 8, a, false), hasher.hash(parent, tokens, 4, 8, b, false));
  }

  @Test
  void fieldsCannotRunIntoEachOther() {
    // Adapter "ab" + no salt vs adapter "a" + salt "b", and token boundaries, all differ.
    int[] t = {1, 2};
    assertNotEquals(
        hasher.hash(BlockHash.NONE, t, 0, 2, new CacheScope("ab", null, true), true),
        hasher.hash(BlockHash.NONE, t, 0, 2, new CacheScope("a", "b", true), true));
    assertNotEquals(
        hasher.hash(BlockHash.NONE, t, 0, 2, new CacheScope(null, "x", true), true),
        hasher.hash(BlockHash.NONE, t, 0, 2, new CacheScope("x", null, true), true));
    assertNotEquals(
        hasher.hash(BlockHash.NONE, new int[] {1, 2, 3}, 0, 2, CacheScope.BASE, true),
        hasher.hash(BlockHash.NONE, new int[] {1, 2, 3}, 0, 3, CacheScope.BASE, true));
  }

  @Test
  void onlyFullBlocksAreHashedAndHexRoundTrips() {
    List<BlockHash> chain = hasher.chain(new int[] {1, 2, 3, 4, 5, 6, 7}, 4, CacheScope.BASE);
    assertEquals(1, chain.size());
    assertEquals(chain.get(0), BlockHash.parse(chain.get(0).hex()));
    assertThrows(IllegalArgumentException.class, () -> BlockHash.parse("abc"));
    assertThrows(IllegalArgumentException.class, () -> new CacheScope(null, "", true));
  }
}
