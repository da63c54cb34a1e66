package dev.troupe.deploy;

import dev.troupe.engine.runner.DeviceSettings;
import dev.troupe.protocol.cluster.Roles;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The launcher's flags ({@code troupe serve ...}), parsed and checked.
 *
 * @param port HTTP port of the gateway
 * @param models served models, name to Hugging Face directory (or {@code demo}), in flag order; the
 *     built-in demo model when none is given
 * @param replicas replicas per model name (default 1)
 * @param policies scheduling policy per model name ({@code fcfs}, the default, or {@code priority})
 * @param apiKeys keys from {@code --api-key} and {@code TROUPE_API_KEYS}
 * @param roles cluster roles of this node
 * @param seedNodes {@code host:port} of the cluster's seed nodes; empty = this node alone
 * @param host address other nodes reach this node at (Artery canonical hostname)
 * @param bind local address every server of the node listens on (HTTP API, Pekko Management,
 *     Artery); {@code host} when not given. Differs from {@code host} behind NAT or in a container
 *     ({@code --bind 0.0.0.0})
 * @param clusterPort Artery port (0 = any free port)
 * @param managementPort Pekko Management HTTP port (cluster members, shards, health); -1 = off
 * @param dataDir where the H2 database and the generated API key live
 * @param device where this node's replicas run: {@code --device}, {@code --gpu-memory-utilization},
 *     {@code --dtype}
 * @param metricsWithoutAuth serve {@code GET /metrics} without an API key
 * @param enablePrefixCaching this node's replicas reuse cached prompt prefixes ({@code
 *     --no-enable-prefix-caching} turns it off, as in vLLM)
 * @param reasoningParsers reasoning parser per model name ({@code qwen3}, {@code deepseek_r1} or
 *     {@code none}); a model without one takes the config's default ({@code qwen3} for the demo)
 * @param toolCallParsers tool-call parser per model name ({@code hermes}, {@code llama3_json},
 *     {@code mistral})
 * @param enableAutoToolChoice serve {@code tool_choice: "auto"} on the models with a tool-call
 *     parser
 * @param discovery how the node finds its cluster: {@code none} ({@code seedNodes}, or a cluster of
 *     its own) or {@code kubernetes-api} (Pekko Cluster Bootstrap, contact points from the
 *     Kubernetes API: the pods labelled {@code app=<service name>})
 * @param requiredContactPoints with a discovery method: how many contact points must be found
 *     before the first nodes form a new cluster (bootstrap's {@code required-contact-point-nr})
 * @param shutdownTimeout seconds in-flight generations get to finish on SIGTERM before they migrate
 *     to other replicas; -1 = the config's ({@code troupe.node.drain.timeout}, 30 s)
 */
public record LaunchOptions(
    int port,
    Map<String, String> models,
    Map<String, Integer> replicas,
    Map<String, String> policies,
    List<String> apiKeys,
    List<String> roles,
    List<String> seedNodes,
    String host,
    String bind,
    int clusterPort,
    int managementPort,
    Path dataDir,
    DeviceSettings device,
    boolean metricsWithoutAuth,
    boolean enablePrefixCaching,
    Map<String, String> reasoningParsers,
    Map<String, String> toolCallParsers,
    boolean enableAutoToolChoice,
    String discovery,
    int requiredContactPoints,
    int shutdownTimeout) {

  public static final String USAGE =
      """
      Usage: troupe serve [options]
        --port N                 HTTP port of the OpenAI-compatible API (default 8000)
        --model NAME=DIR         serve the Hugging Face model in DIR as NAME (repeatable);
                                 DIR "demo" is the built-in demo model (the default)
        --replicas NAME=N        run N replicas of model NAME (default 1)
        --scheduling-policy NAME=P  fcfs (default) or priority (request "priority" honoured)
        --api-key KEY            accept this Bearer key (repeatable; also TROUPE_API_KEYS=k1,k2);
                                 without any, a key is generated once into <data-dir>/api-key
        --roles R1,R2            cluster roles of this node: gateway, worker, trainer (default all)
        --seed-nodes H:P,...     join the cluster at these nodes (default: form a new cluster)
        --host HOST              address other nodes reach this node at (default 127.0.0.1);
                                 the API, management and cluster ports listen on it too
        --bind ADDR              listen on ADDR instead of HOST (e.g. 0.0.0.0 in a container)
        --cluster-port N         cluster (Artery) port (default 25520)
        --management-port N      Pekko Management HTTP port, -1 = off (default 7626)
        --data-dir DIR           database and key directory (default ./data)
        --device D               auto (default: CUDA if a usable GPU and the CUDA 13 libraries are
                                 found, else CPU), cpu, cuda (replicas over all GPUs) or cuda:N
        --gpu-memory-utilization F  share of a GPU's memory per replica; the KV cache gets the rest
                                 of it (default 0.9)
        --dtype T                weights dtype, vLLM's: auto (default: the checkpoint's, FP32 as
                                 bfloat16), bfloat16, half, float16, float, float32 (GPU: auto
                                 and bfloat16)
        --metrics-without-auth   serve GET /metrics without an API key (for scrapers)
        --no-enable-prefix-caching  this node's replicas compute every prompt in full instead of
                                 reusing the KV blocks of cached prefixes (on by default, as vLLM's
                                 --enable-prefix-caching)
        --reasoning-parser NAME=P  split model NAME's <think> reasoning out of the content:
                                 qwen3, deepseek_r1 or none (default: qwen3 for the demo model)
        --tool-call-parser NAME=P  parse model NAME's tool calls: hermes (Qwen), llama3_json,
                                 mistral
        --enable-auto-tool-choice  serve tool_choice "auto" on models with a tool-call parser
        --discovery M            find the cluster through Pekko Cluster Bootstrap: kubernetes-api
                                 (pods labelled app=$PEKKO_CLUSTER_BOOTSTRAP_SERVICE_NAME, read from
                                 the Kubernetes API; needs the management port) or none (default:
                                 --seed-nodes, or a cluster of its own)
        --required-contact-points N  with --discovery: nodes that must be found before the first
                                 ones form a new cluster (default 2; set it to the initial count)
        --shutdown-timeout N     on SIGTERM, seconds generations in flight get to finish before
                                 they move to other replicas (default 30)
      """;

  public LaunchOptions {
    if (port < 0 || port > 65535)
      throw new IllegalArgumentException("--port out of range: " + port);
    if (clusterPort < 0 || clusterPort > 65535)
      throw new IllegalArgumentException("--cluster-port out of range: " + clusterPort);
    models = Collections.unmodifiableMap(new LinkedHashMap<>(models));
    replicas = Map.copyOf(replicas);
    for (var e : replicas.entrySet()) {
      if (!models.containsKey(e.getKey()))
        throw new IllegalArgumentException("--replicas names unknown model " + e.getKey());
      if (e.getValue() < 1) throw new IllegalArgumentException("--replicas must be >= 1");
    }
    policies = Map.copyOf(policies);
    for (var e : policies.entrySet()) {
      if (!models.containsKey(e.getKey()))
        throw new IllegalArgumentException("--scheduling-policy names unknown model " + e.getKey());
      if (!List.of("fcfs", "priority").contains(e.getValue()))
        throw new IllegalArgumentException("--scheduling-policy must be fcfs or priority");
    }
    apiKeys = List.copyOf(apiKeys);
    roles = List.copyOf(roles);
    for (String r : roles)
      if (!List.of(Roles.GATEWAY, Roles.WORKER, Roles.TRAINER).contains(r))
        throw new IllegalArgumentException("unknown role " + r + " (gateway, worker, trainer)");
    if (roles.isEmpty()) throw new IllegalArgumentException("--roles must name at least one role");
    seedNodes = List.copyOf(seedNodes);
    if (host == null || host.isBlank()) throw new IllegalArgumentException("--host is empty");
    if (bind == null) bind = host;
    if (bind.isBlank()) throw new IllegalArgumentException("--bind is empty");
    reasoningParsers = Map.copyOf(reasoningParsers);
    for (var e : reasoningParsers.entrySet()) {
      if (!models.containsKey(e.getKey()))
        throw new IllegalArgumentException("--reasoning-parser names unknown model " + e.getKey());
      if (!List.of("qwen3", "deepseek_r1", "none").contains(e.getValue()))
        throw new IllegalArgumentException(
            "--reasoning-parser must be qwen3, deepseek_r1 or none, got " + e.getValue());
    }
    toolCallParsers = Map.copyOf(toolCallParsers);
    for (var e : toolCallParsers.entrySet()) {
      if (!models.containsKey(e.getKey()))
        throw new IllegalArgumentException("--tool-call-parser names unknown model " + e.getKey());
      if (!List.of("hermes", "llama3_json", "mistral").contains(e.getValue()))
        throw new IllegalArgumentException(
            "--tool-call-parser must be hermes, llama3_json or mistral, got " + e.getValue());
    }
    if (enableAutoToolChoice && toolCallParsers.isEmpty())
      throw new IllegalArgumentException("--enable-auto-tool-choice needs --tool-call-parser");
    if (!List.of("none", KUBERNETES_API).contains(discovery))
      throw new IllegalArgumentException(
          "--discovery must be kubernetes-api or none, got " + discovery);
    if (!discovery.equals("none")) {
      if (!seedNodes.isEmpty())
        throw new IllegalArgumentException("--seed-nodes and --discovery exclude each other");
      if (managementPort < 0)
        throw new IllegalArgumentException(
            "--discovery needs the management port (contact points talk to it)");
    }
    if (requiredContactPoints < 1)
      throw new IllegalArgumentException("--required-contact-points must be >= 1");
    if (shutdownTimeout < -1)
      throw new IllegalArgumentException("--shutdown-timeout must be >= 0 seconds");
  }

  /** {@code --discovery} through the Kubernetes API. */
  public static final String KUBERNETES_API = "kubernetes-api";

  /**
   * Parses {@code args} (an optional leading {@code serve}, then flags) with {@code envKeys} the
   * value of {@code TROUPE_API_KEYS} (may be null).
   *
   * @throws IllegalArgumentException naming the bad flag
   */
  public static LaunchOptions parse(List<String> args, String envKeys) {
    int port = 8000;
    Map<String, String> models = new LinkedHashMap<>();
    Map<String, Integer> replicas = new LinkedHashMap<>();
    Map<String, String> policies = new LinkedHashMap<>();
    Map<String, String> reasoning = new LinkedHashMap<>();
    Map<String, String> toolParsers = new LinkedHashMap<>();
    boolean autoToolChoice = false;
    List<String> keys = new ArrayList<>();
    List<String> roles = List.of(Roles.GATEWAY, Roles.WORKER, Roles.TRAINER);
    List<String> seeds = List.of();
    String host = "127.0.0.1";
    String bind = null;
    boolean metricsWithoutAuth = false;
    boolean prefixCaching = true;
    int clusterPort = 25520;
    int managementPort = 7626;
    Path dataDir = Path.of("data");
    String device = "auto", dtype = "auto";
    double gpuMem = 0.9;
    String discovery = "none";
    int contactPoints = 2;
    int shutdownTimeout = -1;
    int i = 0;
    if (!args.isEmpty() && args.get(0).equals("serve")) i++;
    for (; i < args.size(); i++) {
      String flag = args.get(i);
      String value;
      int eq = flag.indexOf('=');
      if (!flag.startsWith("--")) throw new IllegalArgumentException("unexpected argument " + flag);
      if (eq > 0) {
        value = flag.substring(eq + 1);
        flag = flag.substring(0, eq);
      } else if (BOOLEAN_FLAGS.contains(flag)) {
        value = "true";
      } else {
        if (flag.equals("--help")) throw new IllegalArgumentException(USAGE);
        if (i + 1 >= args.size()) throw new IllegalArgumentException(flag + " needs a value");
        value = args.get(++i);
      }
      switch (flag) {
        case "--port" -> port = integer(flag, value);
        case "--model" -> {
          String[] kv = pair(flag, value);
          if (models.put(kv[0], kv[1]) != null)
            throw new IllegalArgumentException("--model " + kv[0] + " given twice");
        }
        case "--replicas" -> {
          String[] kv = pair(flag, value);
          replicas.put(kv[0], integer(flag, kv[1]));
        }
        case "--scheduling-policy" -> {
          String[] kv = pair(flag, value);
          policies.put(kv[0], kv[1]);
        }
        case "--reasoning-parser" -> {
          String[] kv = pair(flag, value);
          reasoning.put(kv[0], kv[1]);
        }
        case "--tool-call-parser" -> {
          String[] kv = pair(flag, value);
          toolParsers.put(kv[0], kv[1]);
        }
        case "--enable-auto-tool-choice" -> autoToolChoice = bool(flag, value);
        case "--api-key" -> keys.add(value);
        case "--roles" -> roles = list(value);
        case "--seed-nodes" -> seeds = list(value);
        case "--host" -> host = value;
        case "--bind" -> bind = value;
        case "--metrics-without-auth" -> metricsWithoutAuth = bool(flag, value);
        case "--enable-prefix-caching" -> prefixCaching = bool(flag, value);
        case "--no-enable-prefix-caching" -> prefixCaching = !bool(flag, value);
        case "--cluster-port" -> clusterPort = integer(flag, value);
        case "--management-port" -> managementPort = integer(flag, value);
        case "--data-dir" -> dataDir = Path.of(value);
        case "--device" -> device = value;
        case "--dtype" -> dtype = value;
        case "--discovery" -> discovery = value;
        case "--required-contact-points" -> contactPoints = integer(flag, value);
        case "--shutdown-timeout" -> shutdownTimeout = integer(flag, value);
        case "--gpu-memory-utilization" -> {
          try {
            gpuMem = Double.parseDouble(value.trim());
          } catch (NumberFormatException e) {
            throw new IllegalArgumentException(flag + " expects a number, got " + value);
          }
        }
        default -> throw new IllegalArgumentException("unknown flag " + flag + "\n" + USAGE);
      }
    }
    if (models.isEmpty()) models.put("demo", "demo");
    if (envKeys != null) keys.addAll(list(envKeys));
    for (String seed : seeds)
      if (!seed.matches("[^:]+:\\d+"))
        throw new IllegalArgumentException("--seed-nodes entries must be host:port, got " + seed);
    return new LaunchOptions(
        port,
        models,
        replicas,
        policies,
        keys,
        roles,
        seeds,
        host,
        bind,
        clusterPort,
        managementPort,
        dataDir,
        new DeviceSettings(device, gpuMem, dtype),
        metricsWithoutAuth,
        prefixCaching,
        reasoning,
        toolParsers,
        autoToolChoice,
        discovery,
        contactPoints,
        shutdownTimeout);
  }

  /** Flags that take no value ({@code --flag}, or {@code --flag=true|false}). */
  private static final List<String> BOOLEAN_FLAGS =
      List.of(
          "--metrics-without-auth",
          "--enable-prefix-caching",
          "--no-enable-prefix-caching",
          "--enable-auto-tool-choice");

  private static boolean bool(String flag, String value) {
    return switch (value.trim().toLowerCase(java.util.Locale.ROOT)) {
      case "true", "on", "yes" -> true;
      case "false", "off", "no" -> false;
      default -> throw new IllegalArgumentException(flag + " expects true or false, got " + value);
    };
  }

  public int replicasOf(String model) {
    return replicas.getOrDefault(model, 1);
  }

  public String policyOf(String model) {
    return policies.getOrDefault(model, "fcfs");
  }

  private static int integer(String flag, String value) {
    try {
      return Integer.parseInt(value.trim());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(flag + " expects a number, got " + value);
    }
  }

  private static String[] pair(String flag, String value) {
    int eq = value.indexOf('=');
    if (eq <= 0 || eq == value.length() - 1)
      throw new IllegalArgumentException(flag + " expects NAME=VALUE, got " + value);
    return new String[] {value.substring(0, eq), value.substring(eq + 1)};
  }

  private static List<String> list(String value) {
    List<String> out = new ArrayList<>();
    for (String s : value.split(",")) if (!s.isBlank()) out.add(s.trim());
    return out;
  }
}
