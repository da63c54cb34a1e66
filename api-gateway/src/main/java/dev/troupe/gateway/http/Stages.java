package dev.troupe.gateway.http;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.actor.typed.ActorSystem;

/**
 * The stages Pekko's Java API returns (an ask, a stream's materialized value, {@code
 * watchTermination}'s completion, a queue's pull), made ordinary {@link CompletableFuture}s that
 * complete on the actor system's default dispatcher.
 *
 * <p>Why: those stages are Scala futures seen through {@code FutureConverters}, whose stage class
 * runs even the non-async methods ({@code thenApply}, {@code handle}, {@code whenComplete}…) on the
 * stage's default executor, the common fork-join pool; with fewer than 3 cores that pool has
 * parallelism 1, and then {@code CompletableFuture} starts a new thread for each task. Every such
 * stage chained directly cost a request a thread. The stage returned here is a plain one: what is
 * chained on it runs on the dispatcher that completed it (or at once, when already complete).
 */
public final class Stages {
  private Stages() {}

  /** {@code stage}, completed on {@code system}'s default dispatcher. */
  public static <T> CompletableFuture<T> on(ActorSystem<?> system, CompletionStage<T> stage) {
    CompletableFuture<T> plain = new CompletableFuture<>();
    // completed with the stage's own value or exception (not wrapped), as chaining on it directly
    stage.whenCompleteAsync(
        (v, e) -> {
          if (e == null) plain.complete(v);
          else plain.completeExceptionally(e);
        },
        system.executionContext());
    return plain;
  }
}
