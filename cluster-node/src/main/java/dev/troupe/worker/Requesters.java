package dev.troupe.worker;

import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationEvent;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;
import org.apache.pekko.actor.typed.ActorRef;

/**
 * Who waits for which request on a worker: request id to reply address, and per address its ids, so
 * that one address going away cancels all of its requests. An address is watched while it has a
 * request here (through the given callbacks, which are the worker's {@code watchWith}/{@code
 * unwatch}).
 *
 * <p>Thread: the owning worker's. Not thread-safe.
 */
final class Requesters {
  private final Map<String, ActorRef<GenerationEvent>> byId = new HashMap<>();
  private final Map<ActorRef<GenerationEvent>, Set<String>> byRef = new HashMap<>();
  private final Consumer<ActorRef<GenerationEvent>> watch;
  private final Consumer<ActorRef<GenerationEvent>> unwatch;

  Requesters(
      Consumer<ActorRef<GenerationEvent>> watch, Consumer<ActorRef<GenerationEvent>> unwatch) {
    this.watch = watch;
    this.unwatch = unwatch;
  }

  /** How many requests are in flight. */
  int size() {
    return byId.size();
  }

  boolean contains(String id) {
    return byId.containsKey(id);
  }

  /** Who waits for {@code id}, or null. */
  ActorRef<GenerationEvent> get(String id) {
    return byId.get(id);
  }

  void track(String id, ActorRef<GenerationEvent> replyTo) {
    byId.put(id, replyTo);
    byRef
        .computeIfAbsent(
            replyTo,
            ref -> {
              watch.accept(ref);
              return new HashSet<>();
            })
        .add(id);
  }

  /** Forgets {@code id}; returns who waited for it, or null. */
  ActorRef<GenerationEvent> untrack(String id) {
    ActorRef<GenerationEvent> ref = byId.remove(id);
    if (ref == null) return null;
    Set<String> ids = byRef.get(ref);
    if (ids != null && ids.remove(id) && ids.isEmpty()) {
      byRef.remove(ref);
      unwatch.accept(ref);
    }
    return ref;
  }

  /** The address stopped: forgets and returns its requests' ids. */
  Set<String> gone(ActorRef<GenerationEvent> ref) {
    Set<String> ids = byRef.remove(ref);
    if (ids == null) return Set.of();
    for (String id : ids) byId.remove(id);
    return ids;
  }

  /** Everyone waiting, then forgets them all. */
  Map<String, ActorRef<GenerationEvent>> clear() {
    Map<String, ActorRef<GenerationEvent>> all = new HashMap<>(byId);
    byId.clear();
    byRef.clear();
    return all;
  }
}
