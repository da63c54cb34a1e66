package dev.troupe.protocol.kv;

/**
 * Identity of one full KV block in a prefix cache: 128 bits of a SHA-256 over the parent block's
 * hash, the block's token ids and its extra keys ({@link BlockHasher}). Two blocks with the same
 * hash hold the same keys and values, so a request may reuse the other's block. Workers index their
 * cached blocks by it and publish it; the gateway routes by it.
 *
 * <p>128 bits because hashes are also compared across requests of different tenants: a 64-bit hash
 * would let someone search for a colliding prompt (birthday bound 2^32), 128 bits puts that at
 * 2^64.
 */
public record BlockHash(long hi, long lo) {

  /** The parent of a sequence's first block (vLLM's {@code NONE_HASH}). */
  public static final BlockHash NONE = new BlockHash(0, 0);

  /** 32 lower-case hex digits. */
  public String hex() {
    return String.format("%016x%016x", hi, lo);
  }

  /** Parses {@link #hex()}. */
  public static BlockHash parse(String hex) {
    if (hex.length() != 32) throw new IllegalArgumentException("a block hash has 32 hex digits");
    return new BlockHash(
        Long.parseUnsignedLong(hex.substring(0, 16), 16),
        Long.parseUnsignedLong(hex.substring(16), 16));
  }

  @Override
  public String toString() {
    return hex();
  }
}
