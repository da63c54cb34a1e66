package dev.troupe.gateway.chat;

import dev.troupe.protocol.cluster.ModelWorkerProtocol.ErrorKind;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Failed;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationEvent;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.UpdatePart;
import java.io.ByteArrayOutputStream;
import java.util.HashMap;
import java.util.Map;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.serialization.Serialization;
import org.apache.pekko.serialization.SerializationExtension;

/**
 * Joins the {@link UpdatePart}s of a worker on another node back into the update it cut because it
 * was larger than a frame of Artery's large-message lane (the worker's {@code LargeUpdates}). Parts
 * are joined per request id (a late attempt's parts never mix with the current one's). Confined to
 * its {@link GenerationOwner}'s actor.
 */
final class UpdateParts {
  private final Serialization serialization;
  private final Map<String, ByteArrayOutputStream> joining = new HashMap<>();

  UpdateParts(ActorSystem<?> system) {
    this.serialization = SerializationExtension.get(Adapter.toClassic(system));
  }

  /**
   * {@code e} itself when it is not a part; the joined update at a last part; null while the update
   * still misses parts.
   */
  GenerationEvent join(GenerationEvent e) {
    if (!(e instanceof UpdatePart part)) return e;
    ByteArrayOutputStream bytes =
        joining.computeIfAbsent(part.requestId(), id -> new ByteArrayOutputStream());
    bytes.writeBytes(part.bytes());
    if (!part.last()) return null;
    joining.remove(part.requestId());
    try {
      return (GenerationEvent)
          serialization
              .deserialize(bytes.toByteArray(), part.serializerId(), part.manifest())
              .get();
    } catch (Exception bug) { // Try.get throws what deserializing threw, checked or not
      return new Failed(
          part.requestId(),
          ErrorKind.INTERNAL,
          "The worker's update in " + bytes.size() + " bytes could not be read: " + bug,
          null);
    }
  }
}
