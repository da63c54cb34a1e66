package dev.troupe.worker;

import dev.troupe.engine.LoraAdapter;
import dev.troupe.engine.core.EngineCore;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The LoRA adapters a worker's engine holds: checkpoint name ({@code <model id>:step<N>}) to runner
 * adapter id. Ids are never reused, so a request keeps pointing at the weights it started with.
 *
 * <p>At most {@code capacity} adapters stay registered: registering one more evicts the least
 * recently used ones that no request in flight runs on. When every adapter is in use the cache
 * grows past its capacity for a while rather than fail a request; the next registration trims it.
 *
 * <p>Thread: the owning worker's (it touches the engine core). Not thread-safe.
 */
final class AdapterSlots {
  private final int capacity;

  /** Access order: the first entry is the least recently used. */
  private final LinkedHashMap<String, Integer> ids = new LinkedHashMap<>(16, 0.75f, true);

  private int nextId = 1;

  AdapterSlots(int capacity) {
    if (capacity < 1) throw new IllegalArgumentException("capacity must be >= 1");
    this.capacity = capacity;
  }

  /** The runner id of {@code name}, marking it used; null when it is not registered. */
  Integer lookup(String name) {
    return ids.get(name);
  }

  boolean contains(String name) {
    return ids.containsKey(name);
  }

  /**
   * Registers {@code adapter} as {@code name} with the engine (between two steps) and returns its
   * id; first evicts what is over capacity and idle.
   *
   * @return the evicted names (for the log)
   */
  Registered register(String name, LoraAdapter adapter, EngineCore engine) {
    Integer existing = ids.get(name);
    if (existing != null) return new Registered(existing, List.of());
    List<String> evicted = new ArrayList<>();
    for (Iterator<Map.Entry<String, Integer>> it = ids.entrySet().iterator();
        it.hasNext() && ids.size() >= capacity; ) {
      Map.Entry<String, Integer> e = it.next();
      if (engine.adapterInUse(e.getValue())) continue;
      engine.removeAdapter(e.getValue());
      evicted.add(e.getKey());
      it.remove();
    }
    int id = nextId++;
    engine.registerAdapter(id, adapter);
    ids.put(name, id);
    return new Registered(id, evicted);
  }

  /** Names registered, least recently used first. */
  List<String> names() {
    return List.copyOf(ids.keySet());
  }

  /** A registration's id and what it evicted. */
  record Registered(int id, List<String> evicted) {}
}
