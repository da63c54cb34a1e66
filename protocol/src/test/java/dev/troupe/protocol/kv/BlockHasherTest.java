package dev.troupe.protocol.kv;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import org.junit.jupiter.api.Test;

class BlockHasherTest {
  private final BlockHasher hasher = new BlockHasher();
  private final int[] tokens = {1, 2, 3, 4, 5, 6, 7, 8};

  /**
   * Golden values from Python's hashlib over the documented encoding (tag "tkv1", parent, count,
   * big-endian tokens, presence-byte + length-prefixed UTF-8 adapter and salt): every node must
   * compute the same hashes, so the encoding may not drift.
   */
  @Test
  void matchesTheDocumentedEncoding() {
    List<BlockHash> chain = hasher.chain(tokens, 4, null, null);
    assertEquals("068236e4f61b7b0dac8bbb3186a3ebbf", chain.get(0).hex());
    assertEquals("34458378bcbf93be8a58a2e0fec08401", chain.get(1).hex());
    assertEquals(
        "873f2af7666a3d9ed8f7a5c25b9d7a75",
        hasher.hash(BlockHash.NONE, tokens, 0, 4, null, "salt").hex());
    assertEquals(
        "cf85e0a3a1d8ebe73a816a65a0eb22f8",
        hasher.hash(BlockHash.NONE, tokens, 0, 4, "m:step3", null).hex());
    assertEquals(
        "5e348f8e93526168958823f041d9b823",
        hasher.hash(BlockHash.NONE, new int[] {-1, 70000, 3, 4}, 0, 4, "é", null).hex());
  }

  @Test
  void theSaltEntersTheFirstBlockAndReachesTheRestThroughTheChain() {
    List<BlockHash> plain = hasher.chain(tokens, 4, null, null);
    List<BlockHash> salted = hasher.chain(tokens, 4, null, "tenant-a");
    assertNotEquals(plain.get(0), salted.get(0));
    assertNotEquals(plain.get(1), salted.get(1));
    // A later block hashes the salt only through its parent.
    assertEquals(salted.get(1), hasher.hash(salted.get(0), tokens, 4, 8, null, null));
    assertNotEquals(salted.get(0), hasher.chain(tokens, 4, null, "tenant-b").get(0));
  }

  @Test
  void adaptersSeparateEveryBlock() {
    BlockHash parent = hasher.chain(tokens, 4, "m:step1", null).get(0);
    assertNotEquals(
        hasher.hash(parent, tokens, 4, 8, "m:step1", null),
        hasher.hash(parent, tokens, 4, 8, "m:step2", null));
    assertEquals(
        hasher.chain(tokens, 4, "m:step1", null).get(1),
        hasher.hash(parent, tokens, 4, 8, "m:step1", null));
  }

  @Test
  void fieldsCannotRunIntoEachOther() {
    int[] t = {1, 2, 3};
    assertNotEquals(
        hasher.hash(BlockHash.NONE, t, 0, 2, "ab", null),
        hasher.hash(BlockHash.NONE, t, 0, 2, "a", "b"));
    assertNotEquals(
        hasher.hash(BlockHash.NONE, t, 0, 2, null, "x"),
        hasher.hash(BlockHash.NONE, t, 0, 2, "x", null));
    assertNotEquals(
        hasher.hash(BlockHash.NONE, t, 0, 2, null, null),
        hasher.hash(BlockHash.NONE, t, 0, 3, null, null));
  }

  @Test
  void onlyFullBlocksAreHashedAndHexRoundTrips() {
    List<BlockHash> chain = hasher.chain(new int[] {1, 2, 3, 4, 5, 6, 7}, 4, null, null);
    assertEquals(1, chain.size());
    assertEquals(chain.get(0), BlockHash.parse(chain.get(0).hex()));
    assertThrows(IllegalArgumentException.class, () -> BlockHash.parse("abc"));
  }
}
