package dev.troupe.worker;

import dev.troupe.protocol.cluster.ModelWorkerProtocol.ChoiceUpdate;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationEvent;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationUpdate;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.LogprobEntry;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Started;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.TokenLogprob;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.ToolCallPiece;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.UpdatePart;
import java.util.Arrays;
import java.util.List;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.serialization.Serialization;
import org.apache.pekko.serialization.SerializationExtension;
import org.apache.pekko.serialization.Serializer;
import org.apache.pekko.serialization.Serializers;

/**
 * Sends a requester its updates, cutting one too large for a frame of Artery's large-message lane
 * ({@code pekko.remote.artery.advanced.maximum-large-frame-size}, see {@code LargeMessages}) into
 * {@link UpdatePart}s. Artery drops a message over the frame with only a warning on this node's
 * log: the requester would miss the update (the prompt logprobs of a long prompt, a step of many
 * choices with many logprobs, a beam search's whole outputs) and answer without it, or wait for
 * ever when it was the last. A requester on this node gets every update whole.
 *
 * <p>Only an update whose estimated size is over a quarter of the frame is serialized here to be
 * measured (Artery serializes it again when it fits): the estimate errs high, and is off by far
 * less than the factor 2 between the two bounds.
 *
 * <p>Used on the worker's thread.
 */
final class LargeUpdates {
  private final Serialization serialization;
  private final int slice;

  LargeUpdates(ActorSystem<?> system) {
    this.serialization = SerializationExtension.get(Adapter.toClassic(system));
    long frame =
        system
            .settings()
            .config()
            .getBytes("pekko.remote.artery.advanced.maximum-large-frame-size");
    // half a frame per part: room for the part's own fields and envelope
    this.slice = (int) Math.max(1, Math.min(Integer.MAX_VALUE - 64, frame / 2));
  }

  /** Sends {@code update} to {@code to}: whole, or in parts when it would not fit a frame. */
  void send(ActorRef<GenerationEvent> to, GenerationUpdate update) {
    if (to.path().address().hasLocalScope() || estimate(update) <= slice / 2) {
      to.tell(update);
      return;
    }
    Serializer serializer = serialization.findSerializerFor(update);
    // serialize (not the serializer's toBinary) writes actor refs in it (the Started's worker)
    // with this node's address, as Artery does
    byte[] bytes = serialization.serialize(update).get();
    if (bytes.length <= slice) {
      to.tell(update);
      return;
    }
    String manifest = Serializers.manifestFor(serializer, update);
    for (int from = 0; from < bytes.length; from += slice) {
      int end = Math.min(bytes.length, from + slice);
      to.tell(
          new UpdatePart(
              update.requestId(),
              Arrays.copyOfRange(bytes, from, end),
              end == bytes.length,
              serializer.identifier(),
              manifest));
    }
  }

  /** An upper estimate of {@code u}'s serialized size in bytes (CBOR with field names). */
  static long estimate(GenerationUpdate u) {
    long bytes = 256;
    Started s = u.started();
    if (s != null) {
      bytes += 256 + 3L * chars(s.servedBy());
      if (s.promptTokenIds() != null) bytes += 9L * s.promptTokenIds().size();
      bytes += entries(s.promptLogprobs());
    }
    for (ChoiceUpdate c : u.choices()) {
      bytes += 256 + 3L * (chars(c.text()) + chars(c.reasoning()) + chars(c.stopReason()));
      bytes += 9L * c.tokenIds().size() + entries(c.logprobs());
      for (ToolCallPiece t : c.toolCalls())
        bytes += 128 + 3L * (chars(t.id()) + chars(t.name()) + chars(t.arguments()));
    }
    return bytes;
  }

  private static long entries(List<LogprobEntry> entries) {
    if (entries == null) return 0;
    long bytes = 0;
    for (LogprobEntry e : entries) {
      if (e == null) {
        bytes += 8;
        continue;
      }
      bytes += 32 + logprob(e.chosen());
      for (TokenLogprob t : e.top()) bytes += logprob(t);
    }
    return bytes;
  }

  private static long logprob(TokenLogprob t) {
    return 64 + 3L * chars(t.token());
  }

  private static long chars(Object text) {
    return text == null ? 0 : String.valueOf(text).length();
  }
}
