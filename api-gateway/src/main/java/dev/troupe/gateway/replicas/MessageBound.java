package dev.troupe.gateway.replicas;

import dev.troupe.gateway.http.ApiException;
import dev.troupe.protocol.cluster.GenerationRequest;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.serialization.Serialization;
import org.apache.pekko.serialization.SerializationExtension;

/**
 * The largest message a gateway sends to a worker (a generation request, a {@code /tokenize} or
 * {@code /detokenize}): what fits in one frame of Artery's large-message lane ({@code
 * pekko.remote.artery.advanced.maximum-large-frame-size}, see {@code LargeMessages}), less room for
 * the envelope and what a continuation adds (the tokens already delivered). A larger one would be
 * dropped by Artery with only a warning on the sender's log and the client would wait for a
 * timeout; it is a 400 before it is sent instead. Checked whether or not the chosen worker is on
 * this node, since a continuation may go to another (and a request's answer does not depend on
 * where its replica happens to run).
 *
 * <p>Thread-safe.
 */
public final class MessageBound {
  /** Room left in the frame for the envelope, the reply address and a continuation's tokens. */
  static final long HEADROOM = 1L << 20;

  private final Serialization serialization;
  private final long maxBytes;

  MessageBound(ActorSystem<?> system) {
    this.serialization = SerializationExtension.get(Adapter.toClassic(system));
    long frame =
        system
            .settings()
            .config()
            .getBytes("pekko.remote.artery.advanced.maximum-large-frame-size");
    this.maxBytes = Math.max(0, frame - HEADROOM);
  }

  /** {@code request} if it fits; a 400 naming the limit if not. */
  GenerationRequest check(GenerationRequest request) {
    return check(request, "Send a shorter prompt or fewer messages.");
  }

  /** {@code message} if it fits; a 400 naming the limit, and then {@code advice}, if not. */
  public <T> T check(T message, String advice) {
    int size = serialization.serialize(message).get().length;
    if (size > maxBytes)
      throw ApiException.badRequest(
          "The request is "
              + size
              + " bytes as a message to a model worker; at most "
              + maxBytes
              + " are accepted (pekko.remote.artery.advanced.maximum-large-frame-size less "
              + HEADROOM
              + "; docs/api.md, \"Limits\"). "
              + advice,
          null);
    return message;
  }
}
