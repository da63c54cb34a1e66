package dev.troupe.worker;

import dev.troupe.engine.KvLayout;
import dev.troupe.engine.core.EngineRequest;
import dev.troupe.engine.core.LatencyStats;
import dev.troupe.engine.core.Rejection;
import dev.troupe.engine.serving.Engine;
import dev.troupe.protocol.cluster.GenerationRequest;
import dev.troupe.protocol.cluster.KvHandle;
import dev.troupe.protocol.cluster.KvTransfer;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Command;
import dev.troupe.protocol.cluster.WorkerStatus;
import dev.troupe.scheduler.Scheduler;
import dev.troupe.worker.kv.KvSource;
import dev.troupe.worker.kv.KvTransferClient;
import dev.troupe.worker.kv.KvTransferServer;
import dev.troupe.worker.kv.KvTransferSettings;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.NoSerializationVerificationNeeded;
import org.apache.pekko.actor.typed.javadsl.ActorContext;

/**
 * A replica's side of disaggregated prefill/decode (vLLM's {@code kv_transfer_params}), owned by
 * its {@link ModelWorker} and confined to its thread.
 *
 * <p>Prefill side ({@link KvTransfer.RemoteDecode}): the request runs as any other; once its prompt
 * is prefilled the engine leases the prompt's blocks ({@code KvLeases}) and its last update carries
 * the {@link KvHandle}. The node's {@link KvTransferServer} reads leased blocks through this
 * replica ({@link Export}: one message per batch, the runner being confined to this thread).
 *
 * <p>Decode side ({@link KvTransfer.RemotePrefill}): the request is prepared as usual, then held in
 * the scheduler with its own cached prefix and fresh blocks for the rest of the prompt but its last
 * token; the fresh ones are pulled off this thread ({@link KvTransferClient}) and imported, and the
 * request runs from its last prompt token. A failed pull fails the request or, with {@code
 * load-failure-policy = recompute}, lets it compute its prompt here.
 *
 * <p>{@link #engineId} names this replica's incarnation: a restarted replica registers a new one,
 * so a pull naming the old one is refused (its blocks are gone).
 */
final class KvTransfers {
  /** The node's server reads {@code blocks} of {@code lease} (on this replica's thread). */
  record Export(
      String lease, List<Integer> blocks, KvLayout layout, CompletableFuture<byte[]> result)
      implements Command, NoSerializationVerificationNeeded {}

  /** Lease {@code lease} ends (pulled, or given up by the decode side). */
  record Release(String lease) implements Command, NoSerializationVerificationNeeded {}

  /** A decode request's pull ended: its blocks, or why not. */
  record Pulled(String requestId, byte[] data, Throwable error)
      implements Command, NoSerializationVerificationNeeded {}

  /** Time to end the expired leases. */
  enum Expire implements Command, NoSerializationVerificationNeeded {
    INSTANCE
  }

  /** What a pull fills: the fresh blocks of the held request; when it was asked for. */
  private record Pending(
      KvTransfer.RemotePrefill from, int[] blocks, KvLayout layout, long startNanos) {}

  /** Upper bounds of the pull-seconds buckets: a block or two on a LAN up to a lease's length. */
  static final double[] PULL_SECONDS_BOUNDS = {
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0
  };

  private final ActorContext<Command> ctx;
  private final Engine engine;
  private final KvTransferServer server;
  private final KvTransferSettings settings;
  private final String engineId;
  private volatile InetSocketAddress address;
  private final Map<String, KvTransfer> transfers = new HashMap<>();
  private final Map<String, String> adapters = new HashMap<>();
  private final Map<String, Pending> pulls = new HashMap<>();
  private boolean expiryScheduled;
  private long pulledBytes;
  private long servedBytes;
  private final LatencyStats.Histogram pullSeconds =
      new LatencyStats.Histogram(PULL_SECONDS_BOUNDS);

  KvTransfers(ActorContext<Command> ctx, String entityId, Engine engine) {
    this.ctx = ctx;
    this.engine = engine;
    this.server = KvTransferServer.get(ctx.getSystem());
    this.settings = server.settings();
    this.engineId = entityId + "@" + UUID.randomUUID().toString().substring(0, 8);
    engine.core().kvLeases().duration(settings.lease());
    server.address().thenAccept(a -> address = a);
    var self = ctx.getSelf();
    server.register(
        engineId,
        new KvSource() {
          @Override
          public CompletionStage<byte[]> export(String lease, List<Integer> blocks, KvLayout l) {
            CompletableFuture<byte[]> result = new CompletableFuture<>();
            self.tell(new Export(lease, blocks, l, result));
            // a replica that stopped never answers: the pull fails instead of hanging
            return result.orTimeout(settings.pullTimeout().toMillis(), TimeUnit.MILLISECONDS);
          }

          @Override
          public void release(String lease) {
            self.tell(new Release(lease));
          }
        });
  }

  /** Remembers what request {@code r} asks of P/D; false (and why, to fail it) when it cannot. */
  Rejection track(GenerationRequest r) {
    KvTransfer t = r.kvTransfer();
    if (t == null) return null;
    if (layout(null) == null)
      return Rejection.badRequest(
          "kv_transfer_params: this replica's runner cannot export or import KV blocks",
          "kv_transfer_params");
    var bound = server.address().toCompletableFuture();
    if (bound.isCompletedExceptionally())
      return new Rejection(
          Rejection.Kind.INTERNAL,
          "kv_transfer_params: this node's KV transfer server is not listening: "
              + bound.handle((a, e) -> String.valueOf(e)).join(),
          "kv_transfer_params");
    if (t instanceof KvTransfer.RemotePrefill) {
      if (r.resume() != null)
        return Rejection.badRequest(
            "kv_transfer_params: a resumed request computes its prompt itself",
            "kv_transfer_params");
      if (r.sampling().promptLogprobs() != null)
        return Rejection.badRequest(
            "kv_transfer_params: prompt_logprobs need every prompt position computed here; "
                + "send the request without do_remote_prefill",
            "kv_transfer_params");
    }
    transfers.put(r.requestId(), t);
    var adapter = r.adapter();
    adapters.put(r.requestId(), adapter == null || adapter.isBase() ? "base" : adapter.name());
    return null;
  }

  boolean tracks(String id) {
    return transfers.containsKey(id);
  }

  /**
   * Queues a prepared P/D request in the engine; null when queued (a decode side's pull may still
   * fail it later), else why not.
   */
  Rejection admit(EngineRequest request) {
    String id = request.requestId();
    KvLayout layout = layout(adapters.get(id));
    KvTransfer t = transfers.get(id);
    if (t instanceof KvTransfer.RemotePrefill from) {
      Rejection refused = checkBlocks(from, request.promptTokenIds().length, layout);
      if (refused == null) refused = engine.add(request);
      if (refused != null) {
        releaseRemote(from, layout); // nobody else will pull them: free them now, not at expiry
        return refused;
      }
      Scheduler.Import held = engine.core().holdForImport(id);
      if (held == null) {
        // the cache is too full to hold the blocks now: it waits and computes its prompt here
        releaseRemote(from, layout);
        return null;
      }
      int first = held.cachedBlocks(), end = held.table().length;
      int[] blocks = Arrays.copyOfRange(held.table(), first, end);
      pulls.put(id, new Pending(from, blocks, layout, System.nanoTime()));
      CompletionStage<byte[]> pulled =
          KvTransferClient.pull(
              ctx.getSystem(),
              from.remoteHost(),
              from.remotePort(),
              from.remoteEngineId(),
              from.remoteRequestId(),
              from.remoteBlockIds().subList(first, end),
              layout,
              settings.pullTimeout());
      ctx.pipeToSelf(pulled, (data, error) -> new Pulled(id, data, error));
      return null;
    }
    Rejection refused = engine.add(request);
    if (refused == null) engine.core().kvLeases().want(id, layout);
    return refused;
  }

  /**
   * A pull ended. Returns null when the request goes on (imported, or recomputing here), else why
   * it fails (the caller aborts it).
   */
  Rejection onPulled(Pulled p) {
    Pending pending = pulls.remove(p.requestId());
    if (pending == null) return null; // it left meanwhile: its held blocks were freed with it
    String id = p.requestId();
    if (p.error() == null) {
      try {
        engine.core().completeImport(id, pending.blocks(), p.data());
        pulledBytes += p.data().length;
        pullSeconds.observe(System.nanoTime() - pending.startNanos());
        return null;
      } catch (RuntimeException e) {
        return loadFailed(id, pending, e);
      }
    }
    return loadFailed(id, pending, p.error());
  }

  private Rejection loadFailed(String id, Pending pending, Throwable error) {
    Throwable cause =
        error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
    KvTransfer.RemotePrefill from = pending.from();
    String why =
        "kv_transfer_params: could not load the prompt's KV blocks from "
            + from.remoteHost()
            + ":"
            + from.remotePort()
            + ": "
            + (cause instanceof KvSource.KvRefused || cause instanceof KvTransferClient.TransferCut
                ? cause.getMessage()
                : cause.toString());
    if (settings.recompute()) {
      ctx.getLog().info("{}; computing its prompt here (load-failure-policy recompute)", why);
      engine.core().cancelImport(id);
      return null;
    }
    // refused by the prefill node: the params are stale or wrong (400); the node unreachable or
    // the transfer cut after some blocks (TransferCut): the prefill half is gone, the client may
    // run both halves again (503)
    return cause instanceof KvSource.KvRefused
        ? Rejection.badRequest(why, "kv_transfer_params")
        : new Rejection(
            Rejection.Kind.OVERLOADED,
            why + "; send the request again (its prefill too)",
            "kv_transfer_params");
  }

  /** The handle a finished request's last update carries, or null. */
  KvHandle handle(String id) {
    if (!(transfers.get(id) instanceof KvTransfer.RemoteDecode)) return null;
    List<Integer> blocks = engine.core().kvLeases().leased(id);
    if (blocks == null) return null; // it ended before its prompt was prefilled
    InetSocketAddress at = address;
    if (at == null) {
      try { // bound when the replica started: only a request racing the bind waits here
        at = server.address().toCompletableFuture().get(10, TimeUnit.SECONDS);
      } catch (Exception e) {
        ctx.getLog().error("KV transfer server not listening; {} holds no handle", id, e);
        return null;
      }
    }
    return new KvHandle(engineId, blocks, at.getHostString(), at.getPort(), id, 1);
  }

  /** The request left (finished, failed, cancelled). */
  void forget(String id) {
    transfers.remove(id);
    adapters.remove(id);
    pulls.remove(id);
  }

  /** A decode request refused before its pull: its prefill side frees the blocks now. */
  void refused(String id) {
    if (transfers.get(id) instanceof KvTransfer.RemotePrefill from && !pulls.containsKey(id)) {
      KvLayout layout = layout(adapters.get(id));
      if (layout != null) releaseRemote(from, layout);
    }
  }

  void onExport(Export e) {
    try {
      byte[] bytes = engine.core().kvLeases().export(e.lease(), e.blocks(), e.layout());
      servedBytes += bytes.length;
      e.result().complete(bytes);
    } catch (IllegalArgumentException refused) {
      e.result().completeExceptionally(new KvSource.KvRefused(refused.getMessage()));
    } catch (RuntimeException failed) {
      e.result().completeExceptionally(failed);
    }
  }

  void onRelease(Release r) {
    engine.core().kvLeases().release(r.lease());
  }

  /** After a step: leases taken are checked for expiry while any lives. */
  void afterStep() {
    if (expiryScheduled || engine.core().kvLeases().size() == 0) return;
    expiryScheduled = true;
    ctx.scheduleOnce(Duration.ofSeconds(1), ctx.getSelf(), Expire.INSTANCE);
  }

  void onExpire() {
    expiryScheduled = false;
    int n = engine.core().kvLeases().expire(System.nanoTime());
    if (n > 0) ctx.getLog().debug("{} KV leases expired unpulled; their blocks are freed", n);
    afterStep();
  }

  void stop() {
    server.unregister(engineId);
  }

  String engineId() {
    return engineId;
  }

  /** The replica's KV transfer counters; null when its runner cannot move KV blocks. */
  WorkerStatus.KvTransferStats stats() {
    if (layout(null) == null) return null;
    LatencyStats.Snapshot h = pullSeconds.snapshot();
    return new WorkerStatus.KvTransferStats(
        pulledBytes, servedBytes, new WorkerStatus.Histogram(h.bounds(), h.counts(), h.sum()));
  }

  /** The runner's layout with the served model's and the adapter's identity; null if none. */
  private KvLayout layout(String adapter) {
    try {
      KvLayout l = engine.core().kvLayout();
      return l.withModel(
          l.model()
              + "|served="
              + engine.modelName()
              + "|adapter="
              + (adapter == null ? "base" : adapter));
    } catch (UnsupportedOperationException e) {
      return null;
    }
  }

  private Rejection checkBlocks(KvTransfer.RemotePrefill from, int promptTokens, KvLayout layout) {
    int expected = (promptTokens + layout.blockSize() - 1) / layout.blockSize();
    if (from.remoteBlockIds().size() != expected)
      return Rejection.badRequest(
          "kv_transfer_params.remote_block_ids: "
              + from.remoteBlockIds().size()
              + " blocks given, but the prompt's "
              + promptTokens
              + " tokens fill "
              + expected
              + " blocks of "
              + layout.blockSize(),
          "kv_transfer_params");
    if (from.tpSize() != 1)
      return Rejection.badRequest(
          "kv_transfer_params.tp_size: " + from.tpSize() + " is not served (1 only)",
          "kv_transfer_params");
    return null;
  }

  private void releaseRemote(KvTransfer.RemotePrefill from, KvLayout layout) {
    KvTransferClient.release(
        ctx.getSystem(),
        from.remoteHost(),
        from.remotePort(),
        from.remoteEngineId(),
        from.remoteRequestId(),
        layout);
  }
}
