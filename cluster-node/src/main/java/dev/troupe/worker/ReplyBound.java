package dev.troupe.worker;

import dev.troupe.engine.core.Rejection;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.serialization.Serialization;
import org.apache.pekko.serialization.SerializationExtension;

/**
 * Whether a reply fits one frame of Artery's large-message lane ({@code
 * pekko.remote.artery.advanced.maximum-large-frame-size}, see {@code LargeMessages}) on its way to
 * a requester on another node. Artery drops a larger one with only a warning on this node's log,
 * and the requester waits for its ask's timeout (30 s) to answer a 5xx: a {@code /tokenize} of a
 * long text with {@code return_token_strs}, whose answer is several times its request, did. Such a
 * reply is a 400 saying why instead. (Generation updates are cut into parts: {@link LargeUpdates};
 * a tokenizer answer is one ask's reply.) A requester on this node gets any size.
 *
 * <p>Only a reply whose estimate is over a quarter of the frame is serialized here to be measured.
 * Thread-safe.
 */
final class ReplyBound {
  /** Room in the frame for the envelope and the recipient's path. */
  private static final long ENVELOPE = 64 << 10;

  private final Serialization serialization;
  private final long frame;

  ReplyBound(ActorSystem<?> system) {
    this.serialization = SerializationExtension.get(Adapter.toClassic(system));
    this.frame =
        system
            .settings()
            .config()
            .getBytes("pekko.remote.artery.advanced.maximum-large-frame-size");
  }

  /**
   * Null when {@code reply} may go to {@code to}; otherwise the 400 to send instead, naming the
   * limit and then {@code advice}.
   *
   * @param estimate an upper estimate of the reply's serialized bytes
   */
  Rejection refusal(ActorRef<?> to, Object reply, long estimate, String advice) {
    if (to.path().address().hasLocalScope() || estimate <= frame / 4) return null;
    long size = serialization.serialize(reply).get().length, most = frame - ENVELOPE;
    if (size <= most) return null;
    return Rejection.badRequest(
        "The answer is "
            + size
            + " bytes as a message from the model worker, on another node; at most "
            + most
            + " cross the cluster in one (pekko.remote.artery.advanced.maximum-large-frame-size;"
            + " docs/api.md, \"Limits\"). "
            + advice,
        null);
  }
}
