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
 * The HTTP API's responses in flight on one actor system: each from its request's arrival until its
 * response is written to the end — a streamed body to its last chunk — or its connection is gone.
 * Counted by {@link ClientConnections}; a draining gateway waits for them ({@link #drained}).
 * Thread-safe.
 */
public final class ResponsesInFlight implements Extension {
  private static final ExtensionId<ResponsesInFlight> ID =
      new ExtensionId<>() {
        @Override
        public ResponsesInFlight createExtension(ActorSystem<?> system) {
          return new ResponsesInFlight();
        }
      };

  private final AtomicInteger open = new AtomicInteger();
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
    open.incrementAndGet();
    AtomicBoolean ended = new AtomicBoolean();
    return () -> {
      if (ended.getAndSet(true)) return;
      if (open.decrementAndGet() == 0)
        for (CompletableFuture<Done> w : waiting) w.complete(Done.getInstance());
    };
  }

  /** Responses in flight now. */
  public int count() {
    return open.get();
  }

  /** Whether the server drains: its responses from now on close their connections. */
  boolean draining() {
    return draining;
  }

  /**
   * Starts draining (every response from now on says {@code Connection: close}, so clients take
   * their next request elsewhere) and completes once no response is in flight.
   */
  public CompletionStage<Done> drained() {
    draining = true;
    CompletableFuture<Done> done = new CompletableFuture<>();
    waiting.add(done);
    done.whenComplete((d, e) -> waiting.remove(done));
    if (open.get() == 0) done.complete(Done.getInstance());
    return done;
  }
}
