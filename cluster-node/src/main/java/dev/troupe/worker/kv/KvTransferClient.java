package dev.troupe.worker.kv;

import dev.troupe.engine.KvLayout;
import dev.troupe.worker.kv.KvFrames.Pull;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.stream.javadsl.Framing;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.stream.javadsl.Tcp;
import org.apache.pekko.util.ByteString;

/**
 * The decode side of the KV transfer channel: pulls leased blocks from a prefill node's {@link
 * KvTransferServer}. Runs on the stream materializer, never on an engine thread; the result is
 * handed to the engine whole.
 */
public final class KvTransferClient {
  private KvTransferClient() {}

  /**
   * Blocks {@code blocks} of lease {@code lease} of replica incarnation {@code engineId}, as one
   * array ({@link KvLayout#blockBytes()} per block, in order). Fails with {@link
   * KvSource.KvRefused} carrying the server's reason when it refuses or a block arrives corrupt;
   * with {@link TransferCut} when the connection ends before every block arrived (the prefill node
   * died or its channel closed mid-transfer); with a timeout after {@code timeout}. Blocks are
   * handed over only whole: a cut transfer imports nothing.
   */
  public static CompletionStage<byte[]> pull(
      ActorSystem<?> system,
      String host,
      int port,
      String engineId,
      String lease,
      List<Integer> blocks,
      KvLayout layout,
      Duration timeout) {
    int blockBytes = Math.toIntExact(layout.blockBytes());
    byte[] out = new byte[Math.multiplyExact(blocks.size(), blockBytes)];
    int[] received = {0};
    boolean[] done = {false};
    ByteString request = KvFrames.pull(KvFrames.PULL, new Pull(engineId, lease, blocks, layout));
    return Source.single(request)
        .concat(Source.maybe()) // keep our side open until the answer is read
        .via(Tcp.get(system).outgoingConnection(host, port))
        .via(
            Framing.lengthField(
                4, 0, Math.max(blockBytes + 64, KvFrames.MAX_REQUEST), ByteOrder.BIG_ENDIAN))
        .map(frame -> frame.drop(4))
        .takeWhile(payload -> payload.head() == KvFrames.BLOCK, true)
        .completionTimeout(timeout)
        .runWith(
            Sink.foreach(
                payload -> {
                  switch (payload.head()) {
                    case KvFrames.BLOCK -> {
                      int at = received[0];
                      if (at >= blocks.size())
                        throw new KvSource.KvRefused("more blocks arrived than were asked for");
                      int index = KvFrames.readBlock(payload, out, at * blockBytes, blockBytes);
                      if (index != at)
                        throw new KvSource.KvRefused("block " + index + " arrived out of order");
                      received[0]++;
                    }
                    case KvFrames.DONE -> done[0] = true;
                    case KvFrames.ERROR ->
                        throw new KvSource.KvRefused(KvFrames.errorText(payload));
                    default -> throw new KvSource.KvRefused("unknown frame from the prefill node");
                  }
                }),
            system)
        // on the system's dispatcher: the stage's own non-async methods run on the JDK common pool,
        // which starts a thread per task where its parallelism is 1 (1-2 cores)
        .thenApplyAsync(
            ignored -> {
              if (!done[0] || received[0] != blocks.size())
                throw new TransferCut(
                    "the prefill node closed the KV transfer connection after "
                        + received[0]
                        + " of "
                        + blocks.size()
                        + " KV blocks");
              return out;
            },
            system.executionContext());
  }

  /**
   * The KV channel ended before the pull did (after {@code k} of {@code n} blocks): the prefill
   * side is gone, not the request's parameters at fault.
   */
  public static final class TransferCut extends RuntimeException {
    public TransferCut(String message) {
      super(message, null, false, false);
    }
  }

  /**
   * Ends lease {@code lease} without reading it (the decode side refused the request), so that its
   * blocks are freed now rather than at the lease's expiry. Best effort: completes either way.
   */
  public static CompletionStage<Boolean> release(
      ActorSystem<?> system,
      String host,
      int port,
      String engineId,
      String lease,
      KvLayout layout) {
    ByteString request =
        KvFrames.pull(KvFrames.RELEASE, new Pull(engineId, lease, List.of(), layout));
    return Source.single(request)
        .concat(Source.maybe())
        .via(Tcp.get(system).outgoingConnection(host, port))
        .via(Framing.lengthField(4, 0, KvFrames.MAX_REQUEST, ByteOrder.BIG_ENDIAN))
        .map(frame -> frame.drop(4))
        .take(1)
        .completionTimeout(Duration.ofSeconds(10))
        .runWith(Sink.headOption(), system)
        .handleAsync(
            (first, e) -> e == null && first.isPresent() && first.get().head() == KvFrames.DONE,
            system.executionContext());
  }
}
