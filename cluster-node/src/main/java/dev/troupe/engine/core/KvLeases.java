package dev.troupe.engine.core;

import dev.troupe.engine.KvLayout;
import dev.troupe.engine.ModelRunner;
import dev.troupe.scheduler.BlockAllocator;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * The prefill side of disaggregated prefill/decode: requests that asked for it ({@link #want}) keep
 * the blocks covering their prompt's positions once it is prefilled, under a lease, for a decode
 * replica to pull ({@link #export}); a lease ends when it is pulled ({@link #release}) or expires
 * ({@link #expire}), and its blocks are freed then (its holders' references are dropped; cached
 * ones stay in the prefix cache as eviction candidates).
 *
 * <p>Confined to the engine thread, like the {@link EngineCore} that owns it.
 */
public final class KvLeases {
  /** A request's prompt blocks held for a pull. */
  private record Lease(int[] blocks, KvLayout layout, long expiresAt) {}

  private final ModelRunner runner;
  private final BlockAllocator allocator;
  private final Map<String, KvLayout> wanted = new HashMap<>();
  private final Map<String, Lease> leases = new HashMap<>();
  private long durationNanos = java.time.Duration.ofSeconds(30).toNanos();

  KvLeases(ModelRunner runner, BlockAllocator allocator) {
    this.runner = runner;
    this.allocator = allocator;
  }

  /** How long a lease lasts from its prefill ({@code troupe.kv-transfer.lease}; 30 s). */
  public void duration(java.time.Duration lease) {
    durationNanos = lease.toNanos();
  }

  /** Request {@code id} keeps its prompt's blocks once prefilled, exported as {@code layout}. */
  public void want(String id, KvLayout layout) {
    wanted.put(id, layout);
  }

  /** Whether request {@code id} waits for its prompt's lease. */
  boolean wants(String id) {
    return !wanted.isEmpty() && wanted.containsKey(id);
  }

  /** The prompt of request {@code id} is prefilled into {@code table}: lease its prompt blocks. */
  void prefilled(String id, int[] table, int promptTokens, long now) {
    KvLayout layout = wanted.remove(id);
    if (layout == null) return;
    int n = allocator.blocksFor(promptTokens);
    int[] blocks = java.util.Arrays.copyOf(table, n);
    for (int b : blocks) allocator.share(b);
    Lease old = leases.put(id, new Lease(blocks, layout, now + durationNanos));
    if (old != null) free(old); // a recomputed prefill leases its new blocks
  }

  /** Forgets a request that never got its lease (it failed or was aborted before prefilling). */
  void forget(String id) {
    wanted.remove(id);
  }

  /** The blocks request {@code id} holds for a pull, or null when it holds none. */
  public List<Integer> leased(String id) {
    Lease l = leases.get(id);
    if (l == null) return null;
    return java.util.Arrays.stream(l.blocks).boxed().toList();
  }

  /** Live leases. */
  public int size() {
    return leases.size();
  }

  /**
   * Exports {@code blocks} of lease {@code id} for a decode side of {@code layout}.
   *
   * @throws IllegalArgumentException why the pull is refused: no such lease (pulled, expired, or
   *     never taken), a block that is not the lease's, or a layout that is not the lease's
   */
  public byte[] export(String id, List<Integer> blocks, KvLayout layout) {
    Lease l = leases.get(id);
    if (l == null)
      throw new IllegalArgumentException(
          "no KV blocks are leased under remote_request_id "
              + id
              + " (already pulled, expired after the lease, or never prefilled here)");
    String mismatch = l.layout.mismatch(layout);
    if (mismatch != null)
      throw new IllegalArgumentException("KV layout mismatch (decode != prefill): " + mismatch);
    int[] ids = new int[blocks.size()];
    for (int i = 0; i < ids.length; i++) {
      int b = blocks.get(i);
      boolean ours = false;
      for (int h : l.blocks) ours |= h == b;
      if (!ours)
        throw new IllegalArgumentException(
            "block " + b + " is not one of remote_request_id " + id + "'s leased blocks");
      ids[i] = b;
    }
    return runner.exportBlocks(ids);
  }

  /** Ends lease {@code id}, freeing its blocks; false when there is none. */
  public boolean release(String id) {
    Lease l = leases.remove(id);
    if (l == null) return false;
    free(l);
    return true;
  }

  /** Ends the leases past their expiry; returns how many. */
  public int expire(long now) {
    int n = 0;
    for (Iterator<Lease> it = leases.values().iterator(); it.hasNext(); ) {
      Lease l = it.next();
      if (now - l.expiresAt < 0) continue;
      it.remove();
      free(l);
      n++;
    }
    return n;
  }

  /** Ends every lease (the replica stops). */
  void clear() {
    for (Lease l : leases.values()) free(l);
    leases.clear();
    wanted.clear();
  }

  private void free(Lease l) {
    for (int i = l.blocks.length - 1; i >= 0; i--) allocator.release(l.blocks[i]);
  }
}
