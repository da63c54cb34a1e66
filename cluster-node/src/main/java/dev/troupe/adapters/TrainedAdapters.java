package dev.troupe.adapters;

import dev.troupe.engine.LoraAdapter;
import java.util.LinkedHashMap;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Extension;
import org.apache.pekko.actor.typed.ExtensionId;

/**
 * Adapters this node's trainer just produced, handed to this node's model replicas in memory: a
 * replica told about a new checkpoint takes its adapter from here rather than reading the directory
 * the trainer wrote ({@link CheckpointStore}), which is for replicas on other nodes and for later
 * restarts. Holds the latest step of the models trained most recently ({@code
 * troupe.worker.max-adapters} of them, as many as a replica keeps registered).
 *
 * <p>One per actor system (an {@link Extension}); thread-safe: the trainer offers, replicas on
 * their pinned threads read.
 */
public final class TrainedAdapters implements Extension {

  private static final ExtensionId<TrainedAdapters> ID =
      new ExtensionId<>() {
        @Override
        public TrainedAdapters createExtension(ActorSystem<?> system) {
          return new TrainedAdapters(
              system.settings().config().getInt("troupe.worker.max-adapters"));
        }
      };

  private final int capacity;

  /** Model id → its latest adapter, least recently offered first. */
  private final LinkedHashMap<String, Offered> latest = new LinkedHashMap<>();

  private record Offered(long step, LoraAdapter adapter) {}

  public TrainedAdapters(int capacity) {
    if (capacity < 1) throw new IllegalArgumentException("capacity must be >= 1");
    this.capacity = capacity;
  }

  public static TrainedAdapters get(ActorSystem<?> system) {
    return system.registerExtension(ID);
  }

  /** Step {@code step} of trainable model {@code modelId} is {@code adapter}; older steps go. */
  public synchronized void offer(String modelId, long step, LoraAdapter adapter) {
    latest.remove(modelId);
    latest.put(modelId, new Offered(step, adapter));
    for (var it = latest.entrySet().iterator(); latest.size() > capacity; ) {
      it.next();
      it.remove();
    }
  }

  /**
   * The adapter of step {@code step} of {@code modelId} if this node trained it last; else null.
   */
  public synchronized LoraAdapter find(String modelId, long step) {
    Offered o = latest.get(modelId);
    return o != null && o.step() == step ? o.adapter() : null;
  }
}
