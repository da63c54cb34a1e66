package dev.troupe.worker.kv;

import dev.troupe.worker.kv.KvFrames.Pull;
import java.net.InetSocketAddress;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.pekko.NotUsed;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Extension;
import org.apache.pekko.actor.typed.ExtensionId;
import org.apache.pekko.japi.pf.PFBuilder;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.Framing;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.stream.javadsl.Tcp;
import org.apache.pekko.util.ByteString;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The node's KV transfer server (one per node, bound when the first replica asks for it): serves
 * pulls of leased KV blocks to decode replicas on other nodes, beside Pekko remoting, whose frames
 * are far too small for KV (128 KiB per token for Llama-3.1-8B).
 *
 * <p>Why Pekko Streams' TCP: the node already runs Pekko, whose TCP stages back-pressure end to end
 * (a slow decode side stops the reads from the engine, nothing piles up in memory); length-field
 * framing and a CRC32C per block are a few lines on top; no second networking stack, native library
 * or port-range convention (gRPC, UCX/NIXL) to ship and secure.
 *
 * <p>Per connection: the first frame is a pull ({@link KvFrames}); the server finds the replica
 * incarnation it names ({@link #register}), then reads the blocks through it a batch at a time
 * ({@code mapAsync(1)}: the replica's runner is confined to its engine thread, so every batch is
 * one message to it) and sends one checksummed frame per block, then {@code D}. A refusal (unknown
 * incarnation or lease, a block not the lease's, a layout mismatch) is one {@code E} frame with the
 * reason; a refused, completed or failed pull (its connection gone) ends the lease, freeing its
 * blocks.
 */
public final class KvTransferServer implements Extension {
  private static final Logger log = LoggerFactory.getLogger(KvTransferServer.class);

  private static final ExtensionId<KvTransferServer> ID =
      new ExtensionId<>() {
        @Override
        public KvTransferServer createExtension(ActorSystem<?> system) {
          return new KvTransferServer(system);
        }
      };

  private final ActorSystem<?> system;
  private final KvTransferSettings settings;
  private final Map<String, KvSource> sources = new ConcurrentHashMap<>();
  private final CompletionStage<InetSocketAddress> address;

  private KvTransferServer(ActorSystem<?> system) {
    this.system = system;
    this.settings = KvTransferSettings.from(system.settings().config());
    String host =
        settings.host().isBlank()
            ? system.address().getHost().orElse("127.0.0.1")
            : settings.host();
    this.address =
        Tcp.get(system)
            .bind(host, settings.port())
            .to(Sink.foreach(c -> c.handleWith(handler(), system)))
            .run(system)
            .thenApply(
                b -> {
                  InetSocketAddress bound = b.localAddress();
                  log.info("KV transfer server on {}:{}", host, bound.getPort());
                  return InetSocketAddress.createUnresolved(host, bound.getPort());
                });
  }

  public static KvTransferServer get(ActorSystem<?> system) {
    return system.registerExtension(ID);
  }

  public KvTransferSettings settings() {
    return settings;
  }

  /** Where decode replicas reach this server (unresolved: the host as reported to clients). */
  public CompletionStage<InetSocketAddress> address() {
    return address;
  }

  /** Serves the leases of replica incarnation {@code engineId} until {@link #unregister}. */
  public void register(String engineId, KvSource source) {
    sources.put(engineId, source);
  }

  public void unregister(String engineId) {
    sources.remove(engineId);
  }

  private Flow<ByteString, ByteString, NotUsed> handler() {
    return Flow.of(ByteString.class)
        .via(Framing.lengthField(4, 0, KvFrames.MAX_REQUEST + 4, ByteOrder.BIG_ENDIAN))
        .flatMapConcat(frame -> serve(frame.drop(4)));
  }

  private Source<ByteString, NotUsed> serve(ByteString payload) {
    Pull pull;
    try {
      if (payload.isEmpty()
          || (payload.head() != KvFrames.PULL && payload.head() != KvFrames.RELEASE))
        throw new IllegalArgumentException("not a pull request");
      pull = KvFrames.readPull(payload);
    } catch (RuntimeException e) {
      return Source.single(KvFrames.error(e.getMessage()));
    }
    KvSource source = pull.engineId() == null ? null : sources.get(pull.engineId());
    if (source == null)
      return Source.single(
          KvFrames.error(
              "no prefill replica incarnation "
                  + pull.engineId()
                  + " on this node (it restarted or moved: its KV blocks are gone)"));
    if (payload.head() == KvFrames.RELEASE) {
      source.release(pull.lease());
      return Source.single(KvFrames.done());
    }
    long blockBytes = pull.layout().blockBytes();
    int perBatch = (int) Math.max(1, Math.min(1024, settings.batchBytes() / blockBytes));
    List<List<Integer>> batches = new ArrayList<>();
    for (int i = 0; i < pull.blocks().size(); i += perBatch)
      batches.add(pull.blocks().subList(i, Math.min(pull.blocks().size(), i + perBatch)));
    int[] sent = {0};
    ByteString done = KvFrames.done();
    return Source.from(batches)
        .mapAsync(1, batch -> source.export(pull.lease(), batch, pull.layout()))
        .mapConcat(
            bytes -> {
              int n = (int) (bytes.length / blockBytes);
              List<ByteString> frames = new ArrayList<>(n);
              for (int k = 0; k < n; k++)
                frames.add(
                    KvFrames.block(sent[0]++, bytes, (int) (k * blockBytes), (int) blockBytes));
              return frames;
            })
        .concat(Source.single(done))
        .map(
            frame -> {
              // the last frame: every block was read, the lease ends (released once, in order)
              if (frame == done) source.release(pull.lease());
              return frame;
            })
        .recover(
            new PFBuilder<Throwable, ByteString>()
                .match(
                    Throwable.class,
                    e -> {
                      Throwable cause = e.getCause() != null ? e.getCause() : e;
                      // refused (wrong lease, blocks or layout): the pull cannot succeed, so its
                      // lease ends now; anything else is an engine failure, also final
                      source.release(pull.lease());
                      log.info("KV pull of lease {} refused: {}", pull.lease(), cause.getMessage());
                      return KvFrames.error(
                          cause instanceof KvSource.KvRefused
                              ? cause.getMessage()
                              : "the prefill replica failed to export its KV blocks: " + cause);
                    })
                .build())
        .watchTermination(
            (m, ended) -> {
              // a pull whose connection failed (the decode node died or reset it) is not taken up
              // again — the client never retries a pull, its failure policy decides — so the lease
              // ends now, not at its expiry (ending a lease twice is harmless)
              ended.whenCompleteAsync(
                  (d, e) -> source.release(pull.lease()), system.executionContext());
              return m;
            });
  }
}
