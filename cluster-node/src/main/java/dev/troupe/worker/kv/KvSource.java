package dev.troupe.worker.kv;

import dev.troupe.engine.KvLayout;
import java.util.List;
import java.util.concurrent.CompletionStage;

/**
 * A replica whose leased KV blocks the node's {@link KvTransferServer} serves: the server reads
 * them through it, batch by batch, since the replica's runner is confined to its engine thread.
 */
public interface KvSource {

  /**
   * Blocks {@code blocks} of lease {@code lease}, exported ({@link KvLayout#blockBytes()} per
   * block, in order); fails with {@link KvRefused} when the lease is unknown or expired, a block is
   * not the lease's, or {@code layout} is not the lease's.
   */
  CompletionStage<byte[]> export(String lease, List<Integer> blocks, KvLayout layout);

  /** Ends lease {@code lease}, freeing its blocks (pulled, or given up by the decode side). */
  void release(String lease);

  /** Why a pull was refused: shown to the decode side's client as the request's error. */
  final class KvRefused extends RuntimeException {
    public KvRefused(String message) {
      super(message, null, false, false);
    }
  }
}
