package dev.troupe.worker;

import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The bounded executor a worker runs its input processor on: rendering, tokenizing and preparing
 * requests, and {@code /tokenize} and {@code /detokenize}, never on the engine's pinned thread, so
 * a slow render or a huge prompt cannot stall decoding. A fixed number of threads and a bounded
 * queue: when it is full a task is refused ({@link
 * java.util.concurrent.RejectedExecutionException}) and the worker answers overloaded.
 */
final class InputExecutor {
  private InputExecutor() {}

  /**
   * An executor sized by {@code troupe.worker.input.threads} and {@code
   * troupe.worker.input.queue-size} (2 and 1024 when not set).
   */
  static ThreadPoolExecutor fromConfig(String name, com.typesafe.config.Config config) {
    return create(
        name,
        config.hasPath("troupe.worker.input.threads")
            ? config.getInt("troupe.worker.input.threads")
            : 2,
        config.hasPath("troupe.worker.input.queue-size")
            ? config.getInt("troupe.worker.input.queue-size")
            : 1024);
  }

  /**
   * @param name the replica's entity id, for the threads' names
   * @param threads worker threads (at least 1)
   * @param queue tasks that may wait beyond the busy threads
   */
  static ThreadPoolExecutor create(String name, int threads, int queue) {
    AtomicInteger n = new AtomicInteger();
    ThreadPoolExecutor pool =
        new ThreadPoolExecutor(
            Math.max(1, threads),
            Math.max(1, threads),
            30,
            TimeUnit.SECONDS,
            new ArrayBlockingQueue<>(Math.max(1, queue)),
            r -> {
              Thread t = new Thread(r, name + "-input-" + n.incrementAndGet());
              t.setDaemon(true);
              return t;
            },
            new ThreadPoolExecutor.AbortPolicy());
    pool.allowCoreThreadTimeOut(true);
    return pool;
  }
}
