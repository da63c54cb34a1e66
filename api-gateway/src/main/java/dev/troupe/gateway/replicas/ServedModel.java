package dev.troupe.gateway.replicas;

import dev.troupe.protocol.cluster.ModelWorkerProtocol;
import java.util.ArrayList;
import java.util.List;

/**
 * A model the gateway serves, as configured on the gateway node.
 *
 * @param name the served name clients use in {@code model}, written into responses and metrics
 * @param replicas number of ModelWorker entities ({@code name#0 … name#replicas-1})
 * @param root where the weights come from (shown by {@code /v1/models})
 * @param parent the base model of an adapter, else null
 * @param created seconds since the epoch (shown by {@code /v1/models})
 * @param reasoningParser the model's reasoning parser (its answers carry reasoning), or null
 * @param autoToolParser the parser of {@code tool_choice: "auto"}, or null when auto tool choice is
 *     not enabled for the model
 * @param aliases further names a request's {@code model} may use for it (vLLM's {@code
 *     --served-model-name} with several names); listed by {@code /v1/models} beside {@code name}
 */
public record ServedModel(
    String name,
    int replicas,
    String root,
    String parent,
    long created,
    String reasoningParser,
    String autoToolParser,
    List<String> aliases) {

  /** A model without reasoning or tool-call parsing. */
  public ServedModel(String name, int replicas, String root, String parent, long created) {
    this(name, replicas, root, parent, created, null, null);
  }

  /** A model served under its one name. */
  public ServedModel(
      String name,
      int replicas,
      String root,
      String parent,
      long created,
      String reasoningParser,
      String autoToolParser) {
    this(name, replicas, root, parent, created, reasoningParser, autoToolParser, List.of());
  }

  public ServedModel {
    if (name == null || name.isBlank()) throw new IllegalArgumentException("name is required");
    if (replicas < 1) throw new IllegalArgumentException("replicas must be at least 1");
    if (root == null) root = name;
    aliases = aliases == null ? List.of() : List.copyOf(aliases);
  }

  /** Every name a request may use for it: {@code name}, then its aliases. */
  public List<String> names() {
    List<String> all = new ArrayList<>(1 + aliases.size());
    all.add(name);
    all.addAll(aliases);
    return all;
  }

  /** Whether {@code requested} names this model ({@code name} or an alias). */
  public boolean isNamed(String requested) {
    return name.equals(requested) || aliases.contains(requested);
  }

  /** Entity id of replica {@code index}: {@code name#index}. */
  public String entityId(int index) {
    return ModelWorkerProtocol.entityId(name, index);
  }

  /** A base model with {@code replicas} replicas, created now. */
  public static ServedModel of(String name, int replicas, String root) {
    return new ServedModel(name, replicas, root, null, System.currentTimeMillis() / 1000);
  }
}
