package dev.troupe.gateway.http;

import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Extension;
import org.apache.pekko.actor.typed.ExtensionId;

/**
 * The HTTP API's connections and responses in flight on one actor system, kept by {@link
 * ClientConnections}; a draining gateway waits for them ({@link #drained}).
 *
 * <p>A response is in flight from its request's arrival until it is written to the end — a streamed
 * body to its last chunk — or its connection is gone. A drain waits for more than that: for every
 * connection to be <em>closed</em>, each by the server once no response is in flight on it (an idle
 * one at once). Why: a body's last chunk leaving the response stream is not its last byte on the
 * wire — it may still wait in the connection's TCP stage or socket buffer for a slow reader — and
 * Pekko's graceful termination aborts every connection without a pending request (a TCP reset,
 * which discards those bytes). A connection the server closes itself is closed after its bytes are
 * flushed, so once all are closed nothing is left for the termination to cut.
 *
 * <p>Thread-safe.
 */
public final class ResponsesInFlight implements Extension {
  private static final ExtensionId<ResponsesInFlight> ID =
      new ExtensionId<>() {
        @Override
        public ResponsesInFlight createExtension(ActorSystem<?> system) {
          return new ResponsesInFlight();
        }
      };

  private final AtomicInteger responses = new AtomicInteger();
  private final Set<ClientConnections.Connection> connections = ConcurrentHashMap.newKeySet();
  private final Set<CompletableFuture<Done>> waiting = ConcurrentHashMap.newKeySet();
  private volatile boolean draining;

  private ResponsesInFlight() {}

  /** The counter of {@code system}'s HTTP API. */
  public static ResponsesInFlight get(ActorSystem<?> system) {
    return system.registerExtension(ID);
  }

  /**
   * A response begins; run the returned action when it has ended (running it again does nothing).
   */
  Runnable begin() {
    responses.incrementAndGet();
    AtomicBoolean ended = new AtomicBoolean();
    return () -> {
      if (!ended.getAndSet(true)) responses.decrementAndGet();
    };
  }

  /** A connection was accepted; forgotten once closed. Told to drain if the server drains. */
  void opened(ClientConnections.Connection c) {
    connections.add(c);
    c.closed()
        .whenComplete(
            (d, e) -> {
              if (connections.remove(c) && connections.isEmpty()) wake();
            });
    if (draining) c.drain();
  }

  private void wake() {
    for (CompletableFuture<Done> w : waiting) w.complete(Done.getInstance());
  }

  /** Responses in flight now. */
  public int count() {
    return responses.get();
  }

  /** Connections open now. */
  public int connections() {
    return connections.size();
  }

  /** Whether the server drains: its responses from now on close their connections. */
  boolean draining() {
    return draining;
  }

  /**
   * Starts draining — every connection is closed by the server once no response is in flight on it
   * (responses from now on say {@code Connection: close}) — and completes once all are closed.
   */
  public CompletionStage<Done> drained() {
    draining = true;
    CompletableFuture<Done> done = new CompletableFuture<>();
    waiting.add(done);
    done.whenComplete((d, e) -> waiting.remove(done));
    for (ClientConnections.Connection c : connections) c.drain();
    if (connections.isEmpty()) done.complete(Done.getInstance());
    return done;
  }
}
