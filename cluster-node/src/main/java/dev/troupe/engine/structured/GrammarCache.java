package dev.troupe.engine.structured;

import dev.troupe.engine.structured.grammar.CompiledGrammar;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.Supplier;

/**
 * Compiled grammars by (vocabulary, constraint), least recently used first out, bounded by entry
 * count and by the grammars' own size estimate. Two requests asking for the same grammar at once
 * compile it once: the second waits for the first. Failures are not cached. Thread-safe (the
 * compile threads of every engine of a node may share one).
 */
public final class GrammarCache {

  private final int maxEntries;
  private final long maxBytes;
  private final LinkedHashMap<Object, CompiledGrammar> entries =
      new LinkedHashMap<>(16, 0.75f, true);
  private final Map<Object, CompletableFuture<CompiledGrammar>> inFlight = new HashMap<>();
  private long bytes;
  private long hits;
  private long misses;

  public GrammarCache(int maxEntries, long maxBytes) {
    if (maxEntries < 0 || maxBytes < 0) throw new IllegalArgumentException("negative bound");
    this.maxEntries = maxEntries;
    this.maxBytes = maxBytes;
  }

  /**
   * The cached grammar for {@code key}, else {@code compile}'s result (run on the calling thread,
   * once per key at a time; its exceptions reach every waiter).
   */
  public CompiledGrammar get(Object key, Supplier<CompiledGrammar> compile) {
    CompletableFuture<CompiledGrammar> mine;
    CompletableFuture<CompiledGrammar> theirs;
    synchronized (this) {
      CompiledGrammar g = entries.get(key);
      if (g != null) {
        hits++;
        return g;
      }
      misses++;
      theirs = inFlight.get(key);
      if (theirs == null) {
        mine = new CompletableFuture<>();
        inFlight.put(key, mine);
      } else {
        mine = null;
      }
    }
    if (theirs != null) {
      try {
        return theirs.join();
      } catch (CancellationException | CompletionException e) {
        Throwable cause = e instanceof CompletionException ? e.getCause() : e;
        // the request compiling it was cancelled (its client left): this one still wants it
        if (cause instanceof CancellationException) return get(key, compile);
        throw cause instanceof RuntimeException r ? r : e;
      }
    }
    try {
      CompiledGrammar g = compile.get();
      synchronized (this) {
        inFlight.remove(key);
        put(key, g);
      }
      mine.complete(g);
      return g;
    } catch (RuntimeException | Error e) {
      synchronized (this) {
        inFlight.remove(key);
      }
      mine.completeExceptionally(e);
      throw e;
    }
  }

  private void put(Object key, CompiledGrammar g) {
    if (maxEntries == 0 || g.bytes() > maxBytes) return;
    CompiledGrammar old = entries.put(key, g);
    if (old != null) bytes -= old.bytes();
    bytes += g.bytes();
    Iterator<Map.Entry<Object, CompiledGrammar>> it = entries.entrySet().iterator();
    while ((entries.size() > maxEntries || bytes > maxBytes) && it.hasNext()) {
      Map.Entry<Object, CompiledGrammar> e = it.next();
      bytes -= e.getValue().bytes();
      it.remove();
    }
  }

  /** Counters for logs and tests. */
  public record Stats(int entries, long bytes, long hits, long misses) {}

  public synchronized Stats stats() {
    return new Stats(entries.size(), bytes, hits, misses);
  }
}
