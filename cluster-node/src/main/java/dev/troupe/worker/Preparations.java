package dev.troupe.worker;

import dev.troupe.engine.core.EngineRequest;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.FutureTask;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.function.Supplier;

/**
 * The requests a worker's input processor is preparing, so that a request whose client went away
 * stops costing the replica at once: a preparation still queued is removed and never runs, a
 * running one is interrupted, and the input processor gives up at its next check (between stages,
 * in template rendering and grammar compilation; a custom logits processor's constructor sees the
 * interrupt). Before, an abandoned request kept its input thread busy to the end, and requests
 * queued behind it waited.
 *
 * <p>Thread: the owning worker's (the preparations themselves run on the executor).
 */
final class Preparations {
  private final ThreadPoolExecutor executor;
  private final Map<String, Running> running = new HashMap<>();

  private record Running(FutureTask<Void> task, CompletableFuture<EngineRequest> result) {}

  Preparations(ThreadPoolExecutor executor) {
    this.executor = executor;
  }

  /**
   * Runs {@code work} for request {@code id} on the executor.
   *
   * @return its outcome (never completed when it is cancelled before it starts)
   * @throws RejectedExecutionException when the executor's queue is full
   */
  CompletableFuture<EngineRequest> submit(String id, Supplier<EngineRequest> work) {
    CompletableFuture<EngineRequest> result = new CompletableFuture<>();
    FutureTask<Void> task =
        new FutureTask<>(
            () -> {
              try {
                result.complete(work.get());
              } catch (Throwable t) { // as CompletableFuture.supplyAsync: the failure is the reply
                result.completeExceptionally(t);
              }
            },
            null);
    executor.execute(task);
    running.put(id, new Running(task, result));
    return result;
  }

  /**
   * Forgets {@code id}'s preparation once {@code result} completed; false when {@code result} is
   * not its current one (it was cancelled, and the id may have been sent again since).
   */
  boolean finished(String id, CompletableFuture<EngineRequest> result) {
    Running r = running.get(id);
    if (r == null || r.result() != result) return false;
    running.remove(id);
    return true;
  }

  /** Stops {@code id}'s preparation, if any: dequeued when waiting, interrupted when running. */
  void cancel(String id) {
    Running r = running.remove(id);
    if (r == null) return;
    r.task().cancel(true);
    executor.remove(r.task());
  }

  /** How many are queued or running. */
  int size() {
    return running.size();
  }
}
