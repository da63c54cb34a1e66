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
      for (String name : m.names())
        if (seen.put(name, m) != null)
          throw new IllegalArgumentException("model '" + name + "' is configured twice");
  }

  /**
   * Reads {@code troupe.models}, a list of {@code {name, path, replicas, scheduling-policy,
   * reasoning-parser, tool-call-parser, enable-auto-tool-choice, chat-template, aliases}}.
   */
  public static ServedModels fromConfig(Config config) {
    List<ServedModel> out = new ArrayList<>();
    for (Config c : config.getConfigList("troupe.models")) {
      String path = c.hasPath("path") ? c.getString("path") : ServedModel.DEMO_PATH;
      out.add(
          new ServedModel(
              c.getString("name"),
              path,
              c.hasPath("replicas") ? c.getInt("replicas") : 1,
              c.hasPath("scheduling-policy") ? c.getString("scheduling-policy") : "fcfs",
              c.hasPath("reasoning-parser")
                  ? blankToNull(c.getString("reasoning-parser"))
                  : ServedModel.DEMO_PATH.equals(path) ? "qwen3" : null,
              c.hasPath("tool-call-parser") ? blankToNull(c.getString("tool-call-parser")) : null,
              c.hasPath("enable-auto-tool-choice") && c.getBoolean("enable-auto-tool-choice"),
              c.hasPath("chat-template") ? c.getString("chat-template") : null,
              c.hasPath("aliases") ? c.getStringList("aliases") : List.of()));
    }
    return new ServedModels(out);
  }

  private static String blankToNull(String s) {
    return s == null || s.isBlank() || s.equals("none") ? null : s;
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
   * @param reasoningParser vLLM's {@code --reasoning-parser} for this model ({@code qwen3}, {@code
   *     deepseek_r1}), or null: reasoning is split out of the content
   * @param toolCallParser vLLM's {@code --tool-call-parser} ({@code hermes}, {@code llama3_json},
   *     {@code mistral}), or null
   * @param enableAutoToolChoice vLLM's {@code --enable-auto-tool-choice}: {@code tool_choice:
   *     "auto"} is served (with {@code toolCallParser})
   * @param chatTemplate vLLM's {@code --chat-template}: the template source served instead of the
   *     tokenizer's, or null
   * @param aliases further names clients may use for it (vLLM's {@code --served-model-name} with
   *     several names: the first is {@code name}, the rest are these); responses and metrics use
   *     {@code name}, and so do its replicas' entity ids
   */
  public record ServedModel(
      String name,
      String path,
      int replicas,
      String schedulingPolicy,
      String reasoningParser,
      String toolCallParser,
      boolean enableAutoToolChoice,
      String chatTemplate,
      List<String> aliases) {
    /** The {@code path} of the built-in demo model. */
    public static final String DEMO_PATH = "demo";

    /** The reasoning parsers a model may be configured with. */
    public static final List<String> REASONING_PARSERS = List.of("qwen3", "deepseek_r1");

    /** The tool-call parsers a model may be configured with. */
    public static final List<String> TOOL_CALL_PARSERS =
        List.of("hermes", "llama3_json", "mistral");

    /** A model without reasoning or tool-call parsing. */
    public ServedModel(String name, String path, int replicas, String schedulingPolicy) {
      this(name, path, replicas, schedulingPolicy, null, null, false);
    }

    /** A model served with its tokenizer's chat template. */
    public ServedModel(
        String name,
        String path,
        int replicas,
        String schedulingPolicy,
        String reasoningParser,
        String toolCallParser,
        boolean enableAutoToolChoice) {
      this(
          name,
          path,
          replicas,
          schedulingPolicy,
          reasoningParser,
          toolCallParser,
          enableAutoToolChoice,
          null);
    }

    /** A model served under its one name. */
    public ServedModel(
        String name,
        String path,
        int replicas,
        String schedulingPolicy,
        String reasoningParser,
        String toolCallParser,
        boolean enableAutoToolChoice,
        String chatTemplate) {
      this(
          name,
          path,
          replicas,
          schedulingPolicy,
          reasoningParser,
          toolCallParser,
          enableAutoToolChoice,
          chatTemplate,
          List.of());
    }

    public ServedModel {
      if (name == null || name.isBlank())
        throw new IllegalArgumentException("model name is required");
      aliases = aliases == null ? List.of() : List.copyOf(aliases);
      for (String alias : aliases)
        if (alias == null || alias.isBlank() || alias.equals(name))
          throw new IllegalArgumentException(
              "aliases of " + name + " must be names other than its own, got " + aliases);
      if (new java.util.HashSet<>(aliases).size() < aliases.size())
        throw new IllegalArgumentException("aliases of " + name + " name one alias twice");
      if (path == null || path.isBlank())
        throw new IllegalArgumentException("model path is required");
      if (replicas < 1) throw new IllegalArgumentException("replicas must be >= 1 for " + name);
      if (!schedulingPolicy.equals("fcfs") && !schedulingPolicy.equals("priority"))
        throw new IllegalArgumentException(
            "scheduling-policy of " + name + " must be fcfs or priority, got " + schedulingPolicy);
      if (reasoningParser != null && !REASONING_PARSERS.contains(reasoningParser))
        throw new IllegalArgumentException(
            "reasoning-parser of "
                + name
                + " must be one of "
                + REASONING_PARSERS
                + ", got "
                + reasoningParser);
      if (toolCallParser != null && !TOOL_CALL_PARSERS.contains(toolCallParser))
        throw new IllegalArgumentException(
            "tool-call-parser of "
                + name
                + " must be one of "
                + TOOL_CALL_PARSERS
                + ", got "
                + toolCallParser);
      if (enableAutoToolChoice && toolCallParser == null)
        throw new IllegalArgumentException(
            "enable-auto-tool-choice for " + name + " needs a tool-call-parser");
    }

    /** Every name clients may use for it: {@code name}, then its aliases. */
    public List<String> names() {
      List<String> all = new ArrayList<>(1 + aliases.size());
      all.add(name);
      all.addAll(aliases);
      return all;
    }

    /** The parser {@code tool_choice: "auto"} runs, or null when auto tool choice is off. */
    public String autoToolParser() {
      return enableAutoToolChoice ? toolCallParser : null;
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
