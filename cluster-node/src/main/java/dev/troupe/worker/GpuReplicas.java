package dev.troupe.worker;

import dev.troupe.engine.cuda.CudaModelRunner;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import java.util.function.Function;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Extension;
import org.apache.pekko.actor.typed.ExtensionId;

/**
 * This node's model replicas that serve on a GPU, by model name: the way in for work that must run
 * on a replica's runner, on its engine thread, between two of its engine steps (a training step on
 * the serving GPU, docs/training.md "Sharing the GPU"). A replica registers when it starts on a
 * CUDA runner and leaves when it stops.
 *
 * <p>One per actor system (an {@link Extension}); thread-safe.
 */
public final class GpuReplicas implements Extension {

  private static final ExtensionId<GpuReplicas> ID =
      new ExtensionId<>() {
        @Override
        public GpuReplicas createExtension(ActorSystem<?> system) {
          return new GpuReplicas();
        }
      };

  public static GpuReplicas get(ActorSystem<?> system) {
    return system.registerExtension(ID);
  }

  /** Model name → its replicas on this node, in the order they started. */
  private final Map<String, List<Replica>> byModel = new HashMap<>();

  /** A replica stopped (or is stopping) before the work ran. */
  public static final class ReplicaStopped extends IllegalStateException {
    ReplicaStopped(String message) {
      super(message);
    }
  }

  /**
   * One replica's runner, reachable from any thread: {@link #call} queues work for its engine
   * thread, which runs it between two engine steps (generation pauses for it, requests in flight
   * keep their KV blocks and adapters).
   */
  public static final class Replica {
    private final String entityId;
    private final Consumer<Task> engineThread;
    private final Set<CompletableFuture<?>> pending = ConcurrentHashMap.newKeySet();
    private volatile String stopped;

    /**
     * @param engineThread hands a task to the replica's engine thread (its actor's mailbox)
     */
    Replica(String entityId, Consumer<Task> engineThread) {
      this.entityId = entityId;
      this.engineThread = engineThread;
    }

    /** {@code <model>#<i>}. */
    public String entityId() {
      return entityId;
    }

    public boolean isOpen() {
      return stopped == null;
    }

    /**
     * Runs {@code work} with the replica's runner on its engine thread between two steps; fails
     * with {@link ReplicaStopped} when the replica stops first.
     */
    public <T> CompletableFuture<T> call(Function<CudaModelRunner, T> work) {
      CompletableFuture<T> result = new CompletableFuture<>();
      pending.add(result);
      result.whenComplete((v, e) -> pending.remove(result));
      engineThread.accept(runner -> complete(result, work, runner));
      if (stopped != null) result.completeExceptionally(new ReplicaStopped(stopped));
      return result;
    }

    private static <T> void complete(
        CompletableFuture<T> result, Function<CudaModelRunner, T> work, CudaModelRunner runner) {
      if (result.isDone()) return;
      try {
        result.complete(work.apply(runner));
      } catch (RuntimeException | Error e) {
        result.completeExceptionally(e);
      }
    }

    /** Engine thread: the replica stops; work not run yet fails. */
    void stop(String why) {
      stopped = entityId + " stopped: " + why;
      for (CompletableFuture<?> f : new ArrayList<>(pending))
        f.completeExceptionally(new ReplicaStopped(stopped));
    }
  }

  /** A unit of work for the engine thread, given the runner. */
  @FunctionalInterface
  interface Task {
    void run(CudaModelRunner runner);
  }

  synchronized void register(String model, Replica r) {
    byModel.computeIfAbsent(model, k -> new ArrayList<>()).add(r);
  }

  synchronized void unregister(String model, Replica r) {
    List<Replica> l = byModel.get(model);
    if (l != null && l.remove(r) && l.isEmpty()) byModel.remove(model);
  }

  /** The first open replica of {@code model} on this node's GPUs, if any. */
  public synchronized Optional<Replica> find(String model) {
    return byModel.getOrDefault(model, List.of()).stream().filter(Replica::isOpen).findFirst();
  }
}
