package dev.troupe.protocol.cluster;

import com.typesafe.config.Config;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The models this cluster serves ({@code troupe.models}), read once at start by every node: workers
 * load and start their replicas, gateways route to {@code <name>#<replica>} and list them in {@code
 * /v1/models}.
 *
 * @param models in configuration order; the first is the default model
 */
public record ServedModels(List<ServedModel> models) {

  public ServedModels {
    models = List.copyOf(models);
    Map<String, ServedModel> seen = new LinkedHashMap<>();
    for (ServedModel m : models)
      if (seen.put(m.name(), m) != null)
        throw new IllegalArgumentException("model '" + m.name() + "' is configured twice");
  }

  /** Reads {@code troupe.models}, a list of {@code {name, path, replicas, scheduling-policy}}. */
  public static ServedModels fromConfig(Config config) {
    List<ServedModel> out = new ArrayList<>();
    for (Config c : config.getConfigList("troupe.models")) {
      out.add(
          new ServedModel(
              c.getString("name"),
              c.hasPath("path") ? c.getString("path") : ServedModel.DEMO_PATH,
              c.hasPath("replicas") ? c.getInt("replicas") : 1,
              c.hasPath("scheduling-policy") ? c.getString("scheduling-policy") : "fcfs"));
    }
    return new ServedModels(out);
  }

  public Optional<ServedModel> find(String name) {
    return models.stream().filter(m -> m.name().equals(name)).findFirst();
  }

  /** The first configured model (vLLM answers requests without a model with its first name). */
  public Optional<ServedModel> defaultModel() {
    return models.isEmpty() ? Optional.empty() : Optional.of(models.get(0));
  }

  /**
   * One served model.
   *
   * @param name the name clients use in {@code model}
   * @param path a Hugging Face model directory, or {@code demo} for the built-in demo model
   * @param replicas number of ModelWorker entities ({@code name#0 .. name#replicas-1})
   * @param schedulingPolicy {@code fcfs} (requests with a priority other than 0 are refused) or
   *     {@code priority}
   */
  public record ServedModel(String name, String path, int replicas, String schedulingPolicy) {
    /** The {@code path} of the built-in demo model. */
    public static final String DEMO_PATH = "demo";

    public ServedModel {
      if (name == null || name.isBlank())
        throw new IllegalArgumentException("model name is required");
      if (path == null || path.isBlank())
        throw new IllegalArgumentException("model path is required");
      if (replicas < 1) throw new IllegalArgumentException("replicas must be >= 1 for " + name);
      if (!schedulingPolicy.equals("fcfs") && !schedulingPolicy.equals("priority"))
        throw new IllegalArgumentException(
            "scheduling-policy of " + name + " must be fcfs or priority, got " + schedulingPolicy);
    }

    public boolean isDemo() {
      return DEMO_PATH.equals(path);
    }

    public boolean usesPriority() {
      return schedulingPolicy.equals("priority");
    }

    /** Entity id of replica {@code i}. */
    public String entityId(int replica) {
      return ModelWorkerProtocol.entityId(name, replica);
    }

    /** Entity ids of every replica. */
    public List<String> entityIds() {
      List<String> ids = new ArrayList<>();
      for (int i = 0; i < replicas; i++) ids.add(entityId(i));
      return ids;
    }
  }
}
