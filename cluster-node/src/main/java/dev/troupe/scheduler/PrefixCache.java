package dev.troupe.scheduler;

import dev.troupe.protocol.kv.BlockHash;
import dev.troupe.protocol.kv.BlockHasher;
import java.util.Arrays;
import java.util.List;

/**
 * Automatic prefix caching, as vLLM v1 does it: every full KV block is known by the hash of its
 * prefix ({@link BlockHasher}); a request being admitted reuses the blocks of its longest cached
 * prefix and computes only the rest; a block is published once it is full and its keys and values
 * have been computed. The blocks themselves, their reference counts and the LRU eviction of cached
 * blocks no one holds live in the {@link BlockAllocator}; this class decides what to look up and
 * what to publish, and counts queries and hits.
 *
 * <p>Hits are whole blocks and cover at most all prompt tokens but the last: the last token is
 * always computed, because its logits give the first output token (vLLM's {@code
 * max_cache_hit_length = num_tokens - 1}). Cached blocks are therefore never written into, and
 * copy-on-write for shared blocks is unchanged.
 *
 * <p>Not thread-safe: owned by one {@link Scheduler}.
 */
public final class PrefixCache {
  private static final int[] NONE = new int[0];
  private final BlockAllocator blocks;
  private final boolean enabled;
  private final BlockHasher hasher = new BlockHasher();
  private long queries;
  private long hits;

  PrefixCache(BlockAllocator blocks, boolean enabled) {
    this.blocks = blocks;
    this.enabled = enabled;
  }

  /** Whether prefix caching is on ({@code --no-enable-prefix-caching} turns it off). */
  public boolean enabled() {
    return enabled;
  }

  /**
   * Prompt tokens of admitted requests that looked the cache up (vLLM's {@code
   * prefix_cache_queries}); requests resumed after a preemption are not counted again.
   */
  public long queries() {
    return queries;
  }

  /** Of {@link #queries()}, the tokens found in the cache ({@code prefix_cache_hits}). */
  public long hits() {
    return hits;
  }

  /** Blocks in the cache index, held by a request or not. */
  public int numCachedBlocks() {
    return blocks.numCached();
  }

  /**
   * How the cache index changed since the last call: blocks stored and evicted, coalesced and
   * bounded ({@link CacheDelta}); what a replica publishes so routers know which prefixes it holds.
   */
  public CacheDelta drainChanges() {
    return blocks.drainChanges();
  }

  /** The whole index, for a router that (re)starts tracking this replica. */
  public CacheDelta snapshot() {
    return blocks.snapshot();
  }

  /**
   * Forgets every cached block, as vLLM's {@code reset_prefix_cache} (after new weights, or to
   * benchmark cold). Like vLLM it refuses while any block is held, since running requests would
   * otherwise go on publishing blocks computed partly from the old state.
   *
   * @return false (nothing done) when some request still holds blocks
   */
  public boolean reset() {
    if (blocks.numUsed() > 0) return false;
    blocks.clearCache();
    return true;
  }

  /**
   * The cached blocks holding the longest prefix of {@code seq}'s tokens, leaving at least its last
   * token to compute; none when caching is off or the request does not read the cache. Changes
   * nothing (the caller {@link BlockAllocator#touch touches} what it takes).
   */
  int[] findHit(Sequence seq) {
    if (!enabled || !seq.group().cacheScope().readCache()) return NONE;
    int maxBlocks = (seq.numTokens() - 1) / blocks.blockSize();
    int[] found = new int[maxBlocks];
    int n = 0;
    while (n < maxBlocks) {
      int block = blocks.lookup(blockHash(seq, n));
      if (block < 0) break;
      found[n++] = block;
    }
    return n == maxBlocks ? found : Arrays.copyOf(found, n);
  }

  /**
   * Publishes {@code seq}'s blocks that are full and computed and not yet in the cache. Called
   * after the forward pass that computed them.
   */
  void publish(Sequence seq) {
    if (!enabled) return;
    int[] table = seq.blockTableRef();
    int full = Math.min(seq.numComputed() / blocks.blockSize(), table.length);
    for (int i = seq.numPublished(); i < full; i++) blocks.cache(table[i], blockHash(seq, i));
    if (full > seq.numPublished()) seq.setNumPublished(full);
  }

  /** Counts a request's first admission: its prompt length and the tokens it found cached. */
  void recordAdmission(Sequence seq, int cachedTokens) {
    if (!enabled || !seq.group().cacheScope().readCache()) return;
    queries += seq.numTokens();
    hits += cachedTokens;
  }

  /** Hash of {@code seq}'s block {@code i} (which must be full), extending its chain as needed. */
  private BlockHash blockHash(Sequence seq, int i) {
    List<BlockHash> chain = seq.blockHashes();
    int size = blocks.blockSize();
    CacheScope scope = seq.group().cacheScope();
    while (chain.size() <= i) {
      int k = chain.size();
      BlockHash parent = k == 0 ? BlockHash.NONE : chain.get(k - 1);
      int[] tokens = seq.tokens(k * size, (k + 1) * size);
      chain.add(
          hasher.hash(parent, tokens, 0, size, scope.adapter(), k == 0 ? scope.salt() : null));
    }
    return chain.get(i);
  }
}
