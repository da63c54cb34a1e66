package dev.troupe.engine.serving;

import dev.troupe.engine.core.EngineRequest;
import dev.troupe.engine.core.Rejection;
import dev.troupe.engine.output.RequestUpdate;
import dev.troupe.engine.output.RequestUpdate.ChoiceUpdate;
import dev.troupe.protocol.cluster.GenerationRequest;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Drives an {@link Engine} on the test thread as its worker does: the input processor prepares a
 * request, the engine queues it, steps turn into updates collected per request (and failures).
 */
final class Driver implements AutoCloseable {
  final Engine engine;
  final Map<String, List<RequestUpdate>> updates = new LinkedHashMap<>();
  final Map<String, Rejection> failures = new LinkedHashMap<>();

  Driver(Engine engine) {
    this.engine = engine;
  }

  /** Prepares and queues a request on the base model: null when queued, else its refusal. */
  Rejection add(GenerationRequest r) {
    EngineRequest prepared;
    try {
      prepared = engine.inputs().process(r);
    } catch (Rejection e) {
      return e;
    }
    return engine.add(prepared.withAdapter(0, null, 0));
  }

  /** One step; returns its updates and records them (and its failures). */
  List<RequestUpdate> step() {
    Engine.Step s = engine.step();
    for (RequestUpdate u : s.updates())
      updates.computeIfAbsent(u.requestId(), k -> new ArrayList<>()).add(u);
    for (var f : s.failures()) failures.put(f.requestId(), f.rejection());
    return s.updates();
  }

  /** Steps until idle. */
  Driver drain() {
    int guard = 0;
    while (engine.hasWork() && guard++ < 10_000) step();
    return this;
  }

  /** Aborts a request; records its last update. */
  RequestUpdate abort(String id) {
    RequestUpdate u = engine.abort(id);
    if (u != null) updates.computeIfAbsent(id, k -> new ArrayList<>()).add(u);
    return u;
  }

  List<RequestUpdate> of(String id) {
    return updates.getOrDefault(id, List.of());
  }

  /** Choice {@code choice}'s generated ids across updates. */
  static List<Integer> tokens(List<RequestUpdate> updates, int choice) {
    List<Integer> out = new ArrayList<>();
    for (ChoiceUpdate c : choices(updates, choice)) for (int t : c.tokenIds()) out.add(t);
    return out;
  }

  /** Choice {@code choice}'s text across updates. */
  static String text(List<RequestUpdate> updates, int choice) {
    StringBuilder sb = new StringBuilder();
    for (ChoiceUpdate c : choices(updates, choice)) sb.append(c.text());
    return sb.toString();
  }

  /** The update that finished choice {@code choice}, or null. */
  static ChoiceUpdate finish(List<RequestUpdate> updates, int choice) {
    for (ChoiceUpdate c : choices(updates, choice)) if (c.finishReason() != null) return c;
    return null;
  }

  static List<ChoiceUpdate> choices(List<RequestUpdate> updates, int choice) {
    List<ChoiceUpdate> out = new ArrayList<>();
    for (RequestUpdate u : updates)
      for (ChoiceUpdate c : u.choices()) if (c.index() == choice) out.add(c);
    return out;
  }

  static RequestUpdate.Started started(List<RequestUpdate> updates) {
    return updates.get(0).started();
  }

  static RequestUpdate.Usage usage(List<RequestUpdate> updates) {
    return updates.get(updates.size() - 1).usage();
  }

  @Override
  public void close() {
    engine.close();
  }
}
