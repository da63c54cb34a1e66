package dev.troupe.engine.structured;

import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * The node's helper threads for grammar compiles (token-table walks): a small pool of daemon
 * threads that idle out, shared by every replica. A compile never waits for a helper that did not
 * start, so a busy pool only makes compiles single-threaded.
 */
public final class GrammarHelpers {

  private static final ExecutorService POOL = create();

  private GrammarHelpers() {}

  public static Executor executor() {
    return POOL;
  }

  private static ExecutorService create() {
    int threads = Math.max(1, Math.min(4, Runtime.getRuntime().availableProcessors() / 2));
    ThreadPoolExecutor pool =
        new ThreadPoolExecutor(
            threads,
            threads,
            30,
            TimeUnit.SECONDS,
            new LinkedBlockingQueue<>(64),
            r -> {
              Thread t = new Thread(r, "grammar-compile-helper");
              t.setDaemon(true);
              return t;
            },
            new ThreadPoolExecutor.DiscardPolicy());
    pool.allowCoreThreadTimeOut(true);
    return pool;
  }
}
