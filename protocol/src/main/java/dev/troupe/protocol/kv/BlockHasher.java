package dev.troupe.protocol.kv;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.List;

/**
 * Hash chain of KV blocks, after vLLM v1's {@code hash_block_tokens}: block i's hash covers block
 * i-1's hash, block i's token ids and the extra keys (the LoRA adapter's identity in every block,
 * the request's {@code cache_salt} in the first only, so it reaches every later block through the
 * chain). Equal hashes mean equal prefixes, so a block can be found by its hash alone.
 *
 * <p>The encoding is fixed (not Java's {@code hashCode}, not a per-process seed) so every node
 * computes the same hashes: workers publish them and a router can match them. Per block: the tag
 * {@code "tkv1"}, the parent's 16 bytes, the token count and the tokens as big-endian int32, then
 * the adapter and the salt, each as a presence byte followed by a length-prefixed UTF-8 string.
 * SHA-256 from the JDK because hashes separate tenants (see {@link BlockHash}); it costs about a
 * microsecond per block, small beside computing the block.
 *
 * <p>Not thread-safe (one digest per instance).
 */
public final class BlockHasher {
  private static final byte[] TAG = "tkv1".getBytes(StandardCharsets.US_ASCII);
  private final MessageDigest sha256;
  private ByteBuffer buffer = ByteBuffer.allocate(256);

  public BlockHasher() {
    try {
      sha256 = MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("the JDK has no SHA-256", e); // required of every JDK
    }
  }

  /**
   * Hash of the block holding {@code tokens[from, to)}.
   *
   * @param parent the previous block's hash, {@link BlockHash#NONE} for the first block
   * @param adapterKey identity of the adapter's weights, or null for the base model
   * @param salt the request's cache salt for its first block; null for later blocks and unsalted
   *     requests
   */
  public BlockHash hash(
      BlockHash parent, int[] tokens, int from, int to, String adapterKey, String salt) {
    byte[] adapter = utf8(adapterKey);
    byte[] saltBytes = utf8(salt);
    int size = TAG.length + 16 + 4 + 4 * (to - from) + 10 + len(adapter) + len(saltBytes);
    if (buffer.capacity() < size)
      buffer = ByteBuffer.allocate(Math.max(size, 2 * buffer.capacity()));
    ByteBuffer b = buffer.clear();
    b.put(TAG).putLong(parent.hi()).putLong(parent.lo()).putInt(to - from);
    for (int i = from; i < to; i++) b.putInt(tokens[i]);
    putString(b, adapter);
    putString(b, saltBytes);
    sha256.reset();
    sha256.update(b.array(), 0, b.position());
    ByteBuffer digest = ByteBuffer.wrap(sha256.digest());
    return new BlockHash(digest.getLong(), digest.getLong());
  }

  /** Hashes of every full block of {@code tokens}, in order. */
  public List<BlockHash> chain(int[] tokens, int blockSize, String adapterKey, String salt) {
    List<BlockHash> chain = new ArrayList<>(tokens.length / blockSize);
    BlockHash parent = BlockHash.NONE;
    for (int start = 0; start + blockSize <= tokens.length; start += blockSize) {
      parent = hash(parent, tokens, start, start + blockSize, adapterKey, start == 0 ? salt : null);
      chain.add(parent);
    }
    return chain;
  }

  private static byte[] utf8(String s) {
    return s == null ? null : s.getBytes(StandardCharsets.UTF_8);
  }

  private static int len(byte[] s) {
    return s == null ? 0 : s.length;
  }

  private static void putString(ByteBuffer b, byte[] s) {
    if (s == null) {
      b.put((byte) 0);
    } else {
      b.put((byte) 1).putInt(s.length).put(s);
    }
  }
}
