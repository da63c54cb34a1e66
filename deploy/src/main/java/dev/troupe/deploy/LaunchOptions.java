package dev.troupe.deploy;

import dev.troupe.engine.model.Quantization;
import dev.troupe.engine.runner.DeviceSettings;
import dev.troupe.gateway.routes.VersionRoute;
import dev.troupe.protocol.cluster.KvRole;
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
 *     {@code --dtype}, {@code --enforce-eager}, {@code --quantization}
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
 * @param engine vLLM's engine sizing flags for this node's replicas ({@code --max-model-len},
 *     {@code --max-num-seqs}, {@code --max-num-batched-tokens}); unset ones keep the config's
 * @param chatTemplates the chat template (source) a model is served with instead of its tokenizer's
 *     ({@code --chat-template})
 * @param aliases further names a model is served under ({@code --served-model-name} with several
 *     names: the first names the model, the others are these)
 * @param kvRoles what this node's replicas of a model do in disaggregated prefill/decode ({@code
 *     --kv-role NAME=ROLE}: {@code prefill}, {@code decode} or {@code both}); the key {@code *}
 *     ({@code --kv-role ROLE}) is every model's not named
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
    int shutdownTimeout,
    EngineFlags engine,
    Map<String, String> chatTemplates,
    Map<String, List<String>> aliases,
    Map<String, KvRole> kvRoles) {

  /**
   * vLLM's engine sizing flags; null = the config's value ({@code troupe.worker.engine.*}).
   *
   * @param maxModelLen context length (0 = the model's {@code max_position_embeddings})
   * @param maxNumSeqs most sequences running at once per replica
   * @param maxNumBatchedTokens token budget of one engine step
   */
  public record EngineFlags(Integer maxModelLen, Integer maxNumSeqs, Integer maxNumBatchedTokens) {
    public static final EngineFlags NONE = new EngineFlags(null, null, null);

    public EngineFlags {
      if (maxModelLen != null && maxModelLen < 1)
        throw new IllegalArgumentException("--max-model-len must be >= 1, got " + maxModelLen);
      if (maxNumSeqs != null && maxNumSeqs < 1)
        throw new IllegalArgumentException("--max-num-seqs must be >= 1, got " + maxNumSeqs);
      if (maxNumBatchedTokens != null && maxNumBatchedTokens < 1)
        throw new IllegalArgumentException(
            "--max-num-batched-tokens must be >= 1, got " + maxNumBatchedTokens);
    }
  }

  /**
   * {@code --help} or {@code --version}: not an error, the text to print on standard output before
   * exiting with status 0.
   */
  public static final class InfoRequested extends RuntimeException {
    public InfoRequested(String text) {
      super(text, null, false, false);
    }
  }

  public static final String USAGE =
      """
      Usage: troupe serve [options]
        --model NAME=DIR         serve the Hugging Face model in DIR as NAME (repeatable; the first
                                 is the default); --model DIR serves it as DIR (or as
                                 --served-model-name); DIR "demo" is the built-in demo model (the
                                 default). Models are read from local directories: download one
                                 first, e.g. hf download Qwen/Qwen3-0.6B --local-dir models/qwen3
        --served-model-name NAME [ALIAS...]  the name clients use for the one --model DIR, and
                                 further names they may use for it (vLLM's; responses say NAME)
        --chat-template T        the chat template of the one model: a file, or the template itself
                                 (instead of the tokenizer's; vLLM's)
        --max-model-len N        context length of every replica on this node (default: the
                                 model's max_position_embeddings, capped by the KV cache)
        --max-num-seqs N         most sequences a replica runs at once (default 32)
        --max-num-batched-tokens N  token budget of one engine step (default 2048)
        --port N                 HTTP port of the OpenAI-compatible API (default 8000)
        --replicas NAME=N        run N replicas of model NAME (default 1)
        --scheduling-policy NAME=P  fcfs (default) or priority (request "priority" honoured)
        --kv-role NAME=R         what this node's replicas of model NAME do in disaggregated
                                 prefill/decode: prefill (only prefill legs), decode, or both
                                 (default); --kv-role R sets every model's
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
        --quantization Q         none (default) or q8_0: 8-bit weights with a scale per 32, as
                                 llama.cpp's Q8_0, quantized at load (CPU only; docs/engine.md)
        --enforce-eager          GPU: launch every decode step's kernels one by one instead of
                                 replaying CUDA graphs (default: graphs for decode-only steps)
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
        --version                print the version and exit
        --help                   print this help and exit
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
    if (engine == null) engine = EngineFlags.NONE;
    chatTemplates = Map.copyOf(chatTemplates);
    for (String m : chatTemplates.keySet())
      if (!models.containsKey(m))
        throw new IllegalArgumentException("--chat-template names unknown model " + m);
    kvRoles = Map.copyOf(kvRoles);
    for (String m : kvRoles.keySet())
      if (!m.equals(ALL_MODELS) && !models.containsKey(m))
        throw new IllegalArgumentException("--kv-role names unknown model " + m);
    aliases = Map.copyOf(aliases);
    for (var e : aliases.entrySet()) {
      if (!models.containsKey(e.getKey()))
        throw new IllegalArgumentException(
            "--served-model-name aliases unknown model " + e.getKey());
      for (String alias : e.getValue())
        if (models.containsKey(alias))
          throw new IllegalArgumentException(
              "--served-model-name " + alias + " is already the name of a model");
    }
  }

  /** The key of {@link #kvRoles} that stands for every model not named. */
  public static final String ALL_MODELS = "*";

  /** The aliases of model {@code name} (none by default). */
  public List<String> aliasesOf(String name) {
    return aliases.getOrDefault(name, List.of());
  }

  /** {@code --discovery} through the Kubernetes API. */
  public static final String KUBERNETES_API = "kubernetes-api";

  /**
   * Parses {@code args} (an optional leading {@code serve}, then flags) with {@code envKeys} the
   * value of {@code TROUPE_API_KEYS} (may be null). Reads the {@code --chat-template} file.
   *
   * @throws InfoRequested for {@code --help} and {@code --version}
   * @throws IllegalArgumentException naming the bad flag
   */
  public static LaunchOptions parse(List<String> args, String envKeys) {
    int port = 8000;
    Map<String, String> models = new LinkedHashMap<>();
    Map<String, Integer> replicas = new LinkedHashMap<>();
    Map<String, String> policies = new LinkedHashMap<>();
    Map<String, String> reasoning = new LinkedHashMap<>();
    Map<String, String> toolParsers = new LinkedHashMap<>();
    Map<String, KvRole> kvRoles = new LinkedHashMap<>();
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
    String device = "auto", dtype = "auto", quantization = "none";
    double gpuMem = 0.9;
    boolean enforceEager = false;
    String discovery = "none";
    int contactPoints = 2;
    int shutdownTimeout = -1;
    Integer maxModelLen = null, maxNumSeqs = null, maxBatchedTokens = null;
    List<String> servedNames = null;
    String chatTemplate = null;
    boolean namedModel = false;
    int i = 0;
    if (!args.isEmpty() && args.get(0).equals("serve")) i++;
    for (; i < args.size(); i++) {
      String flag = args.get(i);
      if (flag.equals("--help") || flag.equals("-h")) throw new InfoRequested(USAGE);
      if (flag.equals("--version")) throw new InfoRequested(VersionRoute.buildVersion());
      if (!flag.startsWith("--")) throw new IllegalArgumentException("unexpected argument " + flag);
      String value;
      int eq = flag.indexOf('=');
      if (eq > 0) {
        value = flag.substring(eq + 1);
        flag = flag.substring(0, eq);
      } else if (BOOLEAN_FLAGS.contains(flag)) {
        value = "true";
      } else if (!VALUE_FLAGS.contains(flag)) {
        throw new IllegalArgumentException("unknown flag " + flag);
      } else {
        if (i + 1 >= args.size()) throw new IllegalArgumentException(flag + " needs a value");
        value = args.get(++i);
      }
      switch (flag) {
        case "--port" -> port = integer(flag, value);
        case "--model" -> {
          // NAME=DIR, or vLLM's bare DIR (named as given, or by --served-model-name)
          String[] kv = value.indexOf('=') > 0 ? pair(flag, value) : new String[] {value, value};
          if (kv[0].isBlank()) throw new IllegalArgumentException("--model needs a directory");
          namedModel |= value.indexOf('=') > 0;
          if (models.put(kv[0], kv[1]) != null)
            throw new IllegalArgumentException("--model " + kv[0] + " given twice");
        }
        case "--served-model-name" -> {
          // vLLM takes several names (nargs="+"): the first is the name, the others aliases.
          servedNames = new ArrayList<>(list(value));
          while (i + 1 < args.size() && !args.get(i + 1).startsWith("--"))
            servedNames.add(args.get(++i));
        }
        case "--chat-template" -> chatTemplate = ChatTemplateFlag.read(value);
        case "--max-model-len" -> maxModelLen = integer(flag, value);
        case "--max-num-seqs" -> maxNumSeqs = integer(flag, value);
        case "--max-num-batched-tokens" -> maxBatchedTokens = integer(flag, value);
        case "--replicas" -> {
          String[] kv = pair(flag, value);
          replicas.put(kv[0], integer(flag, kv[1]));
        }
        case "--scheduling-policy" -> {
          String[] kv = pair(flag, value);
          policies.put(kv[0], kv[1]);
        }
        case "--kv-role" -> {
          // NAME=ROLE for one model, a bare ROLE for every model not named
          String[] kv =
              value.indexOf('=') > 0 ? pair(flag, value) : new String[] {ALL_MODELS, value};
          try {
            kvRoles.put(kv[0], KvRole.parse(kv[1]));
          } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("--kv-role: " + e.getMessage());
          }
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
        case "--enforce-eager" -> enforceEager = bool(flag, value);
        case "--enable-prefix-caching" -> prefixCaching = bool(flag, value);
        case "--no-enable-prefix-caching" -> prefixCaching = !bool(flag, value);
        case "--cluster-port" -> clusterPort = integer(flag, value);
        case "--management-port" -> managementPort = integer(flag, value);
        case "--data-dir" -> dataDir = Path.of(value);
        case "--device" -> device = value;
        case "--dtype" -> dtype = value;
        case "--quantization" -> quantization = value;
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
        default -> throw new IllegalArgumentException("unknown flag " + flag);
      }
    }
    if (models.isEmpty()) models.put("demo", "demo");
    Map<String, List<String>> aliases = Map.of();
    if (servedNames != null) {
      models = renamed(models, servedNames, namedModel);
      aliases = Map.of(servedNames.get(0), List.copyOf(servedNames.subList(1, servedNames.size())));
    }
    Map<String, String> templates = new LinkedHashMap<>();
    if (chatTemplate != null) {
      if (models.size() != 1)
        throw new IllegalArgumentException(
            "--chat-template applies to one model; this node is given " + models.size());
      templates.put(models.keySet().iterator().next(), chatTemplate);
    }
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
        new DeviceSettings(device, gpuMem, dtype, !enforceEager)
            .withQuantization(Quantization.parse(quantization)),
        metricsWithoutAuth,
        prefixCaching,
        reasoning,
        toolParsers,
        autoToolChoice,
        discovery,
        contactPoints,
        shutdownTimeout,
        new EngineFlags(maxModelLen, maxNumSeqs, maxBatchedTokens),
        templates,
        aliases,
        kvRoles);
  }

  /**
   * The one model, named by {@code --served-model-name}'s first name (vLLM: instead of the --model
   * argument); the other names are its aliases.
   */
  private static Map<String, String> renamed(
      Map<String, String> models, List<String> names, boolean named) {
    if (names.isEmpty()) throw new IllegalArgumentException("--served-model-name needs a name");
    if (new java.util.HashSet<>(names).size() < names.size())
      throw new IllegalArgumentException("--served-model-name gives one name twice: " + names);
    if (models.size() != 1)
      throw new IllegalArgumentException(
          "--served-model-name names the one model of --model DIR; with several models name each"
              + " as --model NAME=DIR");
    if (named)
      throw new IllegalArgumentException(
          "--served-model-name and --model NAME=DIR both name the model; give one of them");
    return Map.of(names.get(0), models.values().iterator().next());
  }

  /** Flags that take a value ({@code --flag VALUE} or {@code --flag=VALUE}). */
  private static final List<String> VALUE_FLAGS =
      List.of(
          "--port",
          "--model",
          "--served-model-name",
          "--chat-template",
          "--max-model-len",
          "--max-num-seqs",
          "--max-num-batched-tokens",
          "--replicas",
          "--scheduling-policy",
          "--kv-role",
          "--reasoning-parser",
          "--tool-call-parser",
          "--api-key",
          "--roles",
          "--seed-nodes",
          "--host",
          "--bind",
          "--cluster-port",
          "--management-port",
          "--data-dir",
          "--device",
          "--dtype",
          "--quantization",
          "--gpu-memory-utilization",
          "--discovery",
          "--required-contact-points",
          "--shutdown-timeout");

  /** Flags that take no value ({@code --flag}, or {@code --flag=true|false}). */
  private static final List<String> BOOLEAN_FLAGS =
      List.of(
          "--metrics-without-auth",
          "--enforce-eager",
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
