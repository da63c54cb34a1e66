package dev.troupe.deploy;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import com.typesafe.config.ConfigValueFactory;
import dev.troupe.deploy.health.NodeHealth;
import dev.troupe.engine.ComputeSettings;
import dev.troupe.gateway.chat.MigrationSettings;
import dev.troupe.gateway.cluster.ClusterMetrics;
import dev.troupe.gateway.cluster.ClusterRoute;
import dev.troupe.gateway.cluster.ClusterView;
import dev.troupe.gateway.dashboard.DashboardRoute;
import dev.troupe.gateway.http.ApiRoutes;
import dev.troupe.gateway.http.GatewayServer;
import dev.troupe.gateway.http.GatewaySettings;
import dev.troupe.gateway.metrics.ServingMetrics;
import dev.troupe.gateway.preview.PreviewContext;
import dev.troupe.gateway.preview.PreviewRoutes;
import dev.troupe.gateway.preview.TrajectoryCounts;
import dev.troupe.gateway.preview.training.TrainingJobs;
import dev.troupe.gateway.preview.training.TrainingRoutes;
import dev.troupe.gateway.replicas.ModelCatalog;
import dev.troupe.gateway.replicas.ReplicaSelector;
import dev.troupe.gateway.replicas.RoutingSettings;
import dev.troupe.gateway.replicas.TrainedModels;
import dev.troupe.gateway.routes.StandardRoutes;
import dev.troupe.node.DataEntities;
import dev.troupe.node.NodeGuardian;
import dev.troupe.node.NodeReporter;
import dev.troupe.node.NodeSettings;
import dev.troupe.persistence.Persistence;
import dev.troupe.persistence.PersistenceInit;
import dev.troupe.persistence.PersistenceSettings;
import dev.troupe.protocol.cluster.ClusterViewProtocol;
import dev.troupe.protocol.cluster.KvRole;
import dev.troupe.protocol.cluster.LargeMessages;
import dev.troupe.protocol.cluster.ModelWorkerProtocol;
import dev.troupe.protocol.cluster.Roles;
import dev.troupe.protocol.cluster.ServedModels;
import dev.troupe.protocol.cluster.WorkerStatus;
import dev.troupe.worker.EngineProvider;
import dev.troupe.worker.WorkerHealth;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Join;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.apache.pekko.management.cluster.bootstrap.ClusterBootstrap;
import org.apache.pekko.management.javadsl.PekkoManagement;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One Troupe node in this JVM: the actor system (a cluster member with the configured roles), the
 * model workers or their proxies ({@link NodeGuardian}), the preview data entities, the HTTP API on
 * gateway nodes, and Pekko Management (cluster members, shards, health) when its port is set.
 * {@link Main} runs one; tests run several.
 */
public final class TroupeNode implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(TroupeNode.class);

  /** The actor system's name: every node of one cluster uses it. */
  public static final String SYSTEM_NAME = "troupe";

  private final ActorSystem<Void> system;
  private final ServerBinding binding;
  private final List<String> apiKeys;
  private final CompletionStage<List<WorkerStatus>> replicasStarted;

  private TroupeNode(
      ActorSystem<Void> system,
      ServerBinding binding,
      List<String> apiKeys,
      CompletionStage<List<WorkerStatus>> replicasStarted) {
    this.system = system;
    this.binding = binding;
    this.apiKeys = apiKeys;
    this.replicasStarted = replicasStarted;
  }

  /**
   * Starts a node.
   *
   * @param overrides config taking precedence over everything (tests: free ports, no JVM exit)
   * @param announceKey told a generated API key (printed once by the launcher)
   */
  public static TroupeNode start(
      LaunchOptions options, Config overrides, Consumer<String> announceKey) throws Exception {
    // Fail fast, before anything is loaded, when a port is taken (the binds below report it too,
    // but only after the models have loaded, and a failed cluster bind inside the actor system's
    // start cannot always be told apart from other failures).
    checkFree("the cluster (--cluster-port)", options.bind(), options.clusterPort());
    if (options.managementPort() > 0)
      checkFree("Pekko Management (--management-port)", options.bind(), options.managementPort());
    if (options.roles().contains(Roles.GATEWAY))
      checkFree("the HTTP API (--port)", options.bind(), options.port());
    List<String> keys = ApiKeys.resolve(options.apiKeys(), options.dataDir(), announceKey);
    Config base =
        overrides
            .withFallback(LargeMessages.config())
            .withFallback(config(options, keys))
            .withFallback(ConfigFactory.parseResources("troupe-node.conf"))
            .withFallback(ConfigFactory.load());
    PersistenceSettings persistence = PersistenceSettings.fromConfig(base);
    Config config =
        GracefulShutdown.phaseTimeouts(
            Persistence.configFor(persistence).withFallback(base).resolve(),
            options.shutdownTimeout());
    GracefulShutdown.Settings drain = GracefulShutdown.Settings.fromConfig(config);
    PersistenceInit.ensureSchema(persistence);

    NodeSettings node = NodeSettings.fromConfig(config);
    // per JVM (one CPU thread team, one kernel layout): set before any model loads
    ComputeSettings.install(ComputeSettings.fromConfig(config.getConfig("troupe.worker.compute")));
    ActorSystem<Void> system;
    try {
      system =
          ActorSystem.create(
              Behaviors.setup(
                  ctx -> {
                    ctx.spawn(
                        NodeGuardian.create(
                            node,
                            EngineProvider.loading(
                                node.engine(), node.device(), node.structuredOutputs())),
                        "models");
                    // Every node describes itself to the gateways' cluster view.
                    ctx.spawn(
                        NodeReporter.create(
                            REPORT_TIMEOUT, () -> NodeHealth.get(ctx.getSystem()).draining()),
                        "node-reporter");
                    return Behaviors.empty();
                  }),
              SYSTEM_NAME,
              config);
    } catch (RuntimeException e) {
      // Artery binds while the system starts: a cluster port in use ends here.
      if (hasBindFailure(e))
        throw StartupException.cannotListen(
            "the cluster (--cluster-port)", options.bind(), options.clusterPort(), e);
      throw e;
    }
    try {
      Cluster cluster = Cluster.get(system);
      boolean bootstrap = !options.discovery().equals("none");
      if (options.seedNodes().isEmpty() && !bootstrap)
        cluster.manager().tell(Join.create(cluster.selfMember().address()));
      GracefulShutdown.register(system, drain);
      // Hosts on trainer nodes, proxies elsewhere; the gateway's preview routes need them.
      DataEntities.init(system, persistence);
      dev.troupe.training.TrainingEntities.init(system);
      if (options.managementPort() >= 0) {
        try {
          PekkoManagement.get(system).start().toCompletableFuture().get(30, TimeUnit.SECONDS);
        } catch (java.util.concurrent.ExecutionException e) {
          throw StartupException.cannotListen(
              "Pekko Management (--management-port)",
              options.bind(),
              options.managementPort(),
              e.getCause());
        }
        // Contact points found through discovery form the cluster, or this node joins theirs.
        if (bootstrap) ClusterBootstrap.get(Adapter.toClassic(system)).start();
      }
      ServerBinding binding = null;
      if (options.roles().contains(Roles.GATEWAY)) {
        try {
          binding = bindGateway(system, config, node.models());
          GracefulShutdown.registerGateway(system, binding, drain);
        } catch (java.util.concurrent.ExecutionException e) {
          throw StartupException.cannotListen(
              "the HTTP API (--port)", options.bind(), options.port(), e.getCause());
        }
      }
      log.info(
          "Troupe node {} up with roles {}, models {}",
          cluster.selfMember().address(),
          options.roles(),
          options.models().keySet());
      return new TroupeNode(system, binding, keys, WorkerHealth.get(system).replicasStarted());
    } catch (Exception | Error e) {
      system.terminate();
      try {
        system.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
      } catch (Exception stopping) {
        e.addSuppressed(stopping);
      }
      throw e;
    }
  }

  /** Throws a {@link StartupException} when {@code host:port} cannot be listened on now. */
  private static void checkFree(String what, String host, int port) {
    // Port 0 (any free port) still checks that the address is one of this machine's.
    try (java.net.ServerSocket probe = new java.net.ServerSocket()) {
      probe.setReuseAddress(true);
      probe.bind(new java.net.InetSocketAddress(host, port));
    } catch (java.io.IOException e) {
      throw StartupException.cannotListen(what, host, port, e);
    }
  }

  private static boolean hasBindFailure(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause())
      if (t instanceof java.net.BindException) return true;
    return false;
  }

  /** How long a replica may take to describe itself to its node's reporter. */
  static final Duration REPORT_TIMEOUT = Duration.ofSeconds(2);

  /** How long each source of the cluster view may take (more than a node's own replicas). */
  static final Duration VIEW_TIMEOUT = Duration.ofSeconds(3);

  private static ServerBinding bindGateway(
      ActorSystem<?> system, Config config, ServedModels models) throws Exception {
    GatewaySettings gs = GatewaySettings.fromConfig(config);
    ServingMetrics metrics =
        new ServingMetrics(
            ClusterViewProtocol.nodeName(Cluster.get(system).selfMember().address()));
    boolean requestTemplates =
        config.getBoolean("troupe.worker.engine.allow-request-chat-template");
    ReplicaSelector replicas =
        ReplicaSelector.sharded(
            system,
            models.models().stream().map(ServedModels.ServedModel::name).toList(),
            RoutingSettings.fromConfig(config),
            metrics.recorder(),
            new GatewayTokenizers(models, requestTemplates),
            gs.askTimeout());
    ModelCatalog catalog =
        ModelCatalog.of(models, replicas, gs.askTimeout())
            .withTrainedModels(TrainedModels.sharded(system, gs.askTimeout()));
    NodeHealth health = NodeHealth.get(system);
    PreviewContext preview = PreviewContext.sharded(system, gs.askTimeout());
    List<ModelWorkerProtocol.ReplicaId> replicaIds = new ArrayList<>();
    for (ServedModels.ServedModel m : models.models())
      for (int i = 0; i < m.replicas(); i++)
        replicaIds.add(new ModelWorkerProtocol.ReplicaId(m.name(), i));
    ClusterView view =
        new ClusterView(
            system,
            replicaIds,
            VIEW_TIMEOUT,
            new TrainingJobs(preview),
            new TrajectoryCounts(preview, VIEW_TIMEOUT));
    ClusterMetrics clusterMetrics = new ClusterMetrics(view);
    var route =
        ApiRoutes.builder(gs)
            // GET /health is the node's readiness: it fails while the node drains, too.
            .addAll(
                StandardRoutes.of(
                    catalog,
                    metrics,
                    MigrationSettings.fromConfig(config),
                    health::ready,
                    clusterMetrics::scrape))
            .addAll(PreviewRoutes.all(preview))
            .addAll(TrainingRoutes.all(preview))
            .add(new ClusterRoute(view))
            .add(new DashboardRoute())
            .build();
    ServerBinding binding =
        GatewayServer.bind(system, gs, route).toCompletableFuture().get(30, TimeUnit.SECONDS);
    health.gatewayBound(catalog::healthy);
    return binding;
  }

  /** The flags as config: cluster membership, HTTP, models, data directory. */
  static Config config(LaunchOptions o, List<String> keys) {
    List<String> seeds = new ArrayList<>();
    for (String s : o.seedNodes()) seeds.add("pekko://" + SYSTEM_NAME + "@" + s);
    List<Map<String, Object>> models = new ArrayList<>();
    for (var e : o.models().entrySet()) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("name", e.getKey());
      m.put("path", e.getValue());
      m.put("replicas", o.replicasOf(e.getKey()));
      m.put("scheduling-policy", o.policyOf(e.getKey()));
      String reasoning = o.reasoningParsers().get(e.getKey());
      if (reasoning != null) m.put("reasoning-parser", reasoning);
      String tools = o.toolCallParsers().get(e.getKey());
      if (tools != null) m.put("tool-call-parser", tools);
      m.put("enable-auto-tool-choice", o.enableAutoToolChoice() && tools != null);
      String template = o.chatTemplates().get(e.getKey());
      if (template != null) m.put("chat-template", template);
      if (!o.aliasesOf(e.getKey()).isEmpty()) m.put("aliases", o.aliasesOf(e.getKey()));
      models.add(m);
    }
    Map<String, Object> values = new LinkedHashMap<>();
    values.put("pekko.remote.artery.canonical.hostname", o.host());
    values.put("pekko.remote.artery.canonical.port", o.clusterPort());
    values.put("pekko.remote.artery.bind.hostname", o.bind());
    values.put("pekko.cluster.roles", clusterRoles(o));
    values.put("pekko.cluster.seed-nodes", seeds);
    if (!o.discovery().equals("none")) {
      String bootstrap = "pekko.management.cluster.bootstrap.contact-point-discovery.";
      values.put(bootstrap + "discovery-method", o.discovery());
      values.put(bootstrap + "required-contact-point-nr", o.requiredContactPoints());
      // A contact point is the pod's IP (the node's --host), not a per-pod DNS name that needs
      // the cluster DNS's pod records.
      values.put("pekko.discovery.kubernetes-api.use-raw-ip", true);
    }
    values.put("pekko.management.http.hostname", o.host());
    values.put("pekko.management.http.bind-hostname", o.bind());
    values.put("pekko.management.http.port", Math.max(o.managementPort(), 0));
    values.put("troupe.gateway.host", o.bind());
    values.put("troupe.gateway.port", o.port());
    values.put("troupe.gateway.api-keys", keys);
    values.put("troupe.gateway.metrics-without-auth", o.metricsWithoutAuth());
    values.put("troupe.models", models);
    values.put("troupe.persistence.data-dir", o.dataDir().toAbsolutePath().toString());
    values.put("troupe.worker.device.device", o.device().device());
    values.put("troupe.worker.device.gpu-memory-utilization", o.device().gpuMemoryUtilization());
    values.put("troupe.worker.device.dtype", o.device().dtype());
    values.put("troupe.worker.device.cuda-graphs", o.device().cudaGraphs());
    values.put("troupe.worker.device.quantization", o.device().quantization().flag());
    values.put("troupe.worker.engine.enable-prefix-caching", o.enablePrefixCaching());
    if (!o.kvRoles().isEmpty()) {
      KvRole all = o.kvRoles().get(LaunchOptions.ALL_MODELS);
      if (all != null) values.put("troupe.worker.kv-role.default", all.wireName());
      List<Map<String, Object>> byModel = new ArrayList<>();
      for (var e : o.kvRoles().entrySet())
        if (!e.getKey().equals(LaunchOptions.ALL_MODELS))
          byModel.add(Map.of("model", e.getKey(), "role", e.getValue().wireName()));
      values.put("troupe.worker.kv-role.models", byModel);
    }
    if (o.engine().maxModelLen() != null)
      values.put("troupe.worker.engine.max-model-len", o.engine().maxModelLen());
    if (o.engine().maxNumSeqs() != null)
      values.put("troupe.worker.engine.max-num-seqs", o.engine().maxNumSeqs());
    if (o.engine().maxNumBatchedTokens() != null)
      values.put("troupe.worker.engine.max-num-batched-tokens", o.engine().maxNumBatchedTokens());
    // Remembered replicas are kept durably (LMDB) by sharding; under the node's data directory
    // rather than the working directory.
    values.put(
        "pekko.cluster.sharding.distributed-data.durable.lmdb.dir",
        o.dataDir().resolve("sharding").toAbsolutePath().toString());
    Config c = ConfigFactory.empty();
    for (var e : values.entrySet())
      c = c.withValue(e.getKey(), ConfigValueFactory.fromAnyRef(e.getValue()));
    return c;
  }

  public ActorSystem<Void> system() {
    return system;
  }

  /** The address the HTTP API listens on, or null on a node without the gateway role. */
  public java.net.InetSocketAddress httpAddress() {
    return binding == null ? null : binding.localAddress();
  }

  /** The bound HTTP port, or -1 on a node without the gateway role. */
  public int httpPort() {
    return binding == null ? -1 : binding.localAddress().getPort();
  }

  public Address address() {
    return Cluster.get(system).selfMember().address();
  }

  public List<String> apiKeys() {
    return apiKeys;
  }

  /**
   * Every replica this node woke at start, once all have loaded or failed to (each failure's reason
   * in {@link WorkerStatus#unavailable()}); empty on a node without the worker role. Loading a
   * large model takes minutes.
   */
  public CompletionStage<List<WorkerStatus>> replicasStarted() {
    return replicasStarted;
  }

  /**
   * Completes when this node can say it serves: its own replicas have loaded (or one failed to:
   * then at once, with its reason in the list) and, on a gateway, the node is ready — at least one
   * loaded replica of every served model answers, wherever it runs. A gateway-only node therefore
   * waits for the worker nodes' models, not only for itself.
   */
  public CompletionStage<List<WorkerStatus>> serving() {
    return replicasStarted.thenCompose(
        started -> {
          if (binding == null || started.stream().anyMatch(s -> s.unavailable() != null))
            return CompletableFuture.completedFuture(started);
          CompletableFuture<List<WorkerStatus>> ready = new CompletableFuture<>();
          whenReady(ready, started);
          return ready;
        });
  }

  private void whenReady(CompletableFuture<List<WorkerStatus>> ready, List<WorkerStatus> started) {
    NodeHealth.get(system)
        .ready()
        .whenComplete(
            (ok, error) -> {
              if (Boolean.TRUE.equals(ok)) ready.complete(started);
              else if (!system.getWhenTerminated().toCompletableFuture().isDone())
                system
                    .scheduler()
                    .scheduleOnce(
                        READY_POLL, () -> whenReady(ready, started), system.executionContext());
            });
  }

  /** How often {@link #serving} looks at the node's readiness. */
  private static final Duration READY_POLL = Duration.ofMillis(500);

  /** Leaves the cluster and stops the node (CoordinatedShutdown). */
  @Override
  public void close() {
    system.terminate();
    try {
      system.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
    } catch (Exception e) {
      log.warn("node did not stop within 60 s", e);
    }
  }

  /** How long {@link Main} waits for the node to stop at JVM exit. */
  static final Duration SHUTDOWN_TIMEOUT = Duration.ofSeconds(60);

  /**
   * The node's cluster roles: {@code --roles}, and on a worker its declared prefill/decode roles
   * ({@code --kv-role}), by which sharding places model replicas ({@code KvRoles.memberRoles}).
   */
  static List<String> clusterRoles(LaunchOptions o) {
    List<String> roles = new ArrayList<>(o.roles());
    if (!roles.contains(dev.troupe.protocol.cluster.ModelWorkerProtocol.ROLE)) return roles;
    KvRole all = o.kvRoles().getOrDefault(LaunchOptions.ALL_MODELS, KvRole.BOTH);
    Map<String, KvRole> byModel = new LinkedHashMap<>(o.kvRoles());
    byModel.remove(LaunchOptions.ALL_MODELS);
    roles.addAll(new dev.troupe.worker.KvRoles(all, byModel).memberRoles());
    return roles;
  }
}
