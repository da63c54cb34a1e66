package dev.troupe.gateway.replicas;

import dev.troupe.gateway.http.ApiException;
import dev.troupe.gateway.http.Stages;
import dev.troupe.protocol.cluster.GenerationRequest;
import dev.troupe.protocol.cluster.KvTransfer;
import dev.troupe.protocol.cluster.ModelWorkerProtocol;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Command;
import dev.troupe.protocol.cluster.WorkerStatus;
import dev.troupe.protocol.kv.BlockHash;
import dev.troupe.protocol.kv.BlockHasher;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.actor.typed.RecipientRef;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one place a gateway chooses a model replica. Every choice keeps only the replicas this node
 * can reach ({@link Liveness}: never one on an unreachable or downed node; one being restarted only
 * when nothing better is reachable), then:
 *
 * <ul>
 *   <li>a generation's first attempt ({@link #route}) goes where it is cheapest: the replica
 *       holding the longest cached prefix of its prompt against its load and adapter affinity
 *       ({@link CacheAwareRouting}, fed by the replicas' cache reports), or in turn with {@code
 *       routing.policy = round-robin}. The prompt is tokenized for it through the one encoder seam
 *       ({@link PromptTokenizer}), off the caller's thread, and its ids travel with the request;
 *   <li>a continuation after a lost worker ({@link Attempts#next}) and every other ask ({@link
 *       #any}: facts, tokenizer endpoints) take a reachable replica in turn, preferring ones the
 *       request has not lost.
 * </ul>
 *
 * <p>A decision is a {@link Destination}: which replica runs the request, what it is sent, why, and
 * its place in the replica's in-flight count. For a model whose replicas declare prefill/decode
 * roles ({@link PrefillDecider}), prefill-only replicas are left out of that choice, and a request
 * the decider splits also names its prefill replica ({@link Destination#prefill()}): the request's
 * owner sends the prefill leg there first. Nothing else chooses replicas.
 *
 * <p>Thread-safe; one per gateway, shared by all routes.
 */
public final class ReplicaSelector {
  private static final Logger log = LoggerFactory.getLogger(ReplicaSelector.class);
  private static final ThreadLocal<BlockHasher> HASHER = ThreadLocal.withInitial(BlockHasher::new);

  private final ActorSystem<?> system;
  private final Function<String, RecipientRef<Command>> refs;
  private final Liveness liveness;
  private final RoutingTable table;
  private final CacheAwareRouting costs;
  private final PrefillDecider decider;
  private final RoutingSettings settings;
  private final Recorder recorder;
  private final PromptTokenizer tokenizer;
  private final Duration askTimeout;
  private final ExecutorService tokenizing;
  private final MessageBound bound;
  private final Map<String, AtomicInteger> turns = new ConcurrentHashMap<>();
  private final Set<String> probing = ConcurrentHashMap.newKeySet();

  ReplicaSelector(
      ActorSystem<?> system,
      Function<String, RecipientRef<Command>> refs,
      Liveness liveness,
      RoutingTable table,
      RoutingSettings settings,
      Recorder recorder,
      PromptTokenizer tokenizer,
      Duration askTimeout) {
    this.system = system;
    this.refs = refs;
    this.liveness = liveness;
    this.table = table;
    this.costs = new CacheAwareRouting(table, settings);
    this.decider = new PrefillDecider(table, settings, costs);
    this.settings = settings;
    this.recorder = recorder;
    this.tokenizer = tokenizer;
    this.askTimeout = askTimeout;
    this.bound = new MessageBound(system);
    int threads = Math.max(1, Runtime.getRuntime().availableProcessors());
    AtomicInteger n = new AtomicInteger();
    this.tokenizing =
        new ThreadPoolExecutor(
            threads,
            threads,
            60,
            TimeUnit.SECONDS,
            new ArrayBlockingQueue<>(256),
            r -> {
              Thread t = new Thread(r, "troupe-gateway-tokenize-" + n.incrementAndGet());
              t.setDaemon(true);
              return t;
            });
  }

  /**
   * The cluster's selector: workers reached through Cluster Sharding (the {@link
   * ModelWorkerProtocol#TYPE_KEY} entity must be initialized on this node, as host or proxy), their
   * reachability from this node's cluster membership, and with cache-aware routing the cache
   * reports of {@code models}, subscribed to on {@code system}.
   *
   * @param askTimeout how long a status probe of a restarting replica may take
   */
  public static ReplicaSelector sharded(
      ActorSystem<?> system,
      Collection<String> models,
      RoutingSettings settings,
      Recorder recorder,
      PromptTokenizer tokenizer,
      Duration askTimeout) {
    RoutingTable table = new RoutingTable();
    // The reports also carry the replicas' prefill/decode roles: subscribed to whatever the policy.
    int i = 0;
    for (String model : models)
      system.systemActorOf(
          CacheReportSubscriber.create(model, table, settings),
          "prefix-cache-reports-" + i++,
          Props.empty());
    ClusterSharding sharding = ClusterSharding.get(system);
    return new ReplicaSelector(
        system,
        id -> sharding.entityRefFor(ModelWorkerProtocol.TYPE_KEY, id),
        Liveness.start(system),
        table,
        settings,
        recorder,
        tokenizer,
        askTimeout);
  }

  /**
   * Replicas in turn, every one assumed reachable (no cluster membership to consult): tests and
   * embedded gateways.
   *
   * @param refs entity id ({@code model#replica}) to the worker's address
   */
  public static ReplicaSelector inTurn(
      ActorSystem<?> system, Function<String, RecipientRef<Command>> refs, Duration askTimeout) {
    return new ReplicaSelector(
        system,
        refs,
        Liveness.assumeAllLive(),
        new RoutingTable(),
        RoutingSettings.DEFAULTS.withCacheAware(false),
        Recorder.NONE,
        PromptTokenizer.NONE,
        askTimeout);
  }

  public ActorSystem<?> system() {
    return system;
  }

  public RoutingSettings settings() {
    return settings;
  }

  // ------------------------------------------------------------------ a generation's first attempt

  /**
   * Where a generation goes: the replica of {@code model} chosen among its reachable ones, and the
   * request to send it (carrying the prompt's token ids when the gateway computed them). Close
   * {@link Destination#lease()} when the generation ends, however it ends. Fails with a 503 at once
   * when no replica is reachable, and with a 400 when the request (with the ids computed here) is
   * larger than a message to a worker may be ({@link MessageBound}).
   *
   * @param maxModelLen the model's context length (its facts): truncation and the prompt bound of
   *     the gateway's tokenization depend on it
   */
  public CompletionStage<Destination> route(
      ServedModel model, GenerationRequest request, int maxModelLen) {
    return route(model, request, maxModelLen, false);
  }

  /**
   * {@link #route(ServedModel, GenerationRequest, int)} for a completion that may echo its prompt
   * (such a request is never split into prefill and decode legs).
   */
  public CompletionStage<Destination> route(
      ServedModel model, GenerationRequest request, int maxModelLen, boolean echo) {
    List<Integer> candidates = candidates(model, Set.of());
    if (candidates.isEmpty()) return CompletableFuture.failedFuture(noneReachable(model));
    boolean splittable = PrefillDecider.eligible(request, echo);
    // The prompt's ids are needed for cache-aware routing, and for the prefill/decode decision.
    boolean needIds =
        settings.cacheAware() || decider.rolesDeclared(model.name(), model.replicas());
    try {
      if (!needIds)
        return CompletableFuture.completedFuture(
            decide(model, candidates, bound.check(request), null, splittable));
      if (request.promptTokenIds() != null) // the client sent ids (/v1/completions): no tokenizing
      return CompletableFuture.completedFuture(
            decide(
                model,
                candidates,
                bound.check(request),
                truncated(request.promptTokenIds(), request.truncatePromptTokens(), maxModelLen),
                splittable));
    } catch (ApiException e) {
      return CompletableFuture.failedFuture(e);
    }
    return encode(model, request, maxModelLen)
        .thenApply(
            ids ->
                decide(
                    model,
                    candidates,
                    bound.check(ids == null ? request : request.withPromptTokenIds(boxed(ids))),
                    ids,
                    splittable));
  }

  /**
   * The prompt's ids as the model's workers will compute them, on a small bounded pool off the
   * caller's thread; null when they cannot be computed here (no tokenizer on this node, a prompt
   * the encoder refuses, the pool full): the request is then routed on load alone.
   */
  private CompletionStage<int[]> encode(
      ServedModel model, GenerationRequest request, int maxModelLen) {
    try {
      return CompletableFuture.supplyAsync(
              () -> tokenizer.promptTokenIds(model.name(), maxModelLen, request), tokenizing)
          .exceptionally(e -> null);
    } catch (RejectedExecutionException full) {
      return CompletableFuture.completedFuture(null); // busy: route on load rather than wait
    }
  }

  /**
   * The decision itself: the prompt's block-hash chain (with the replicas' block size, the adapter
   * and the salt, as the workers compute theirs), the cheapest candidate (or the next in turn), the
   * request counted in flight there, the decision recorded (metric, DEBUG log).
   *
   * @param promptIds the prompt's token ids, or null when not known (then load decides)
   * @param splittable the request may be split into prefill and decode legs ({@link
   *     PrefillDecider#eligible})
   * @throws ApiException 503 when every candidate is a prefill-only replica
   */
  private Destination decide(
      ServedModel model,
      List<Integer> candidates,
      GenerationRequest request,
      int[] promptIds,
      boolean splittable) {
    String name = model.name();
    boolean roles = decider.rolesDeclared(name, model.replicas());
    // Prefill-only replicas take prefill legs only: the gateway's, and a client's own prefill half.
    List<Integer> decoders =
        !roles
            ? candidates
            : request.kvTransfer() instanceof KvTransfer.RemoteDecode
                ? decider.prefillHalf(name, candidates)
                : decider.decoders(name, candidates);
    if (decoders.isEmpty()) throw noDecoder(model);
    String adapterKey = adapterKey(request.adapter());
    int blockSize = table.blockSize(name);
    List<BlockHash> chain =
        promptIds == null || blockSize == 0
            ? List.of()
            : HASHER.get().chain(promptIds, blockSize, adapterKey, request.cacheSalt());
    int length = promptIds == null ? 0 : promptIds.length;
    RouteDecision decision =
        settings.cacheAware()
            ? costs.choose(new RouteRequest(name, decoders, chain, length, adapterKey))
            : new RouteDecision(inTurn(name, decoders), RouteDecision.ROUND_ROBIN, 0, 0);
    long promptBlocks = blockSize == 0 ? 0 : (length + blockSize - 1) / blockSize;
    Prefill prefill = null;
    if (roles) {
      PrefillDecider.Decision split =
          decider.decide(
              new RouteRequest(name, candidates, chain, length, adapterKey), decision, splittable);
      decision = decision.withDisaggregation(split.reason(), split.prefillReplica());
      if (split.disaggregated())
        prefill =
            new Prefill(
                replica(model, split.prefillReplica()),
                table.started(name, split.prefillReplica(), promptBlocks));
      recorder.disaggregation(name, split.reason());
    }
    Lease lease = table.started(name, decision.replica(), promptBlocks);
    recorder.routed(name, decision.replica(), decision.reason());
    if (log.isDebugEnabled())
      log.debug(
          "route {}#{}: {} ({} prompt tokens, {} cached there, best {}){}",
          name,
          decision.replica(),
          decision.reason(),
          length,
          decision.cachedTokens(),
          decision.bestCachedTokens(),
          roles
              ? "; "
                  + decision.disaggregation()
                  + " (prefill on #"
                  + decision.prefillReplica()
                  + ")"
              : "");
    return new Destination(replica(model, decision.replica()), request, decision, lease, prefill);
  }

  /** The ids the worker will run: the last {@code truncate_prompt_tokens} of them when set. */
  private static int[] truncated(List<Integer> ids, Integer truncate, int maxModelLen) {
    int keep = truncate == null ? ids.size() : truncate == -1 ? maxModelLen : truncate;
    int from = Math.max(0, ids.size() - keep);
    return ids.subList(from, ids.size()).stream().mapToInt(Integer::intValue).toArray();
  }

  private static List<Integer> boxed(int[] ids) {
    List<Integer> out = new ArrayList<>(ids.length);
    for (int id : ids) out.add(id);
    return out;
  }

  /**
   * The prefix-cache identity of a request's adapter: the checkpoint's name ({@code <model
   * id>:step<N>}), null for the base model (step 0 is the base model's weights).
   */
  static String adapterKey(GenerationRequest.Adapter adapter) {
    return adapter == null || adapter.isBase() ? null : adapter.name();
  }

  // ------------------------------------------------------------------ replicas in turn

  /**
   * The next reachable replica of {@code model} to ask something (facts, tokenizer endpoints), in
   * turn.
   *
   * @throws ApiException 503 when no replica of the model is reachable
   */
  public RecipientRef<Command> any(ServedModel model) {
    return next(model, Set.of()).orElseThrow(() -> noneReachable(model)).ref();
  }

  /**
   * A reachable replica of {@code model} in turn: one not in {@code avoid} when there is one, and
   * within that preference a live or unknown replica before a restarting one; empty when none is
   * reachable.
   */
  private Optional<Replica> next(ServedModel model, Set<String> avoid) {
    List<Integer> from = candidates(model, avoid);
    if (from.isEmpty()) return Optional.empty();
    return Optional.of(replica(model, inTurn(model.name(), from)));
  }

  /**
   * The replicas a request may go to now, best first: the first reachability tier ({@link
   * Liveness#tiers}: live and unknown replicas, else restarting ones) that holds a replica not in
   * {@code avoid}; when every reachable replica is avoided, the best tier. Empty when none is
   * reachable. Probes the model's restarting replicas on the way.
   */
  private List<Integer> candidates(ServedModel model, Set<String> avoid) {
    List<List<Integer>> tiers = liveness.tiers(model.name(), model.replicas());
    probeRestarting(model);
    for (List<Integer> tier : tiers) {
      List<Integer> preferred = new ArrayList<>(tier.size());
      for (int i : tier) if (!avoid.contains(model.entityId(i))) preferred.add(i);
      if (!preferred.isEmpty()) return preferred;
    }
    return tiers.isEmpty() ? List.of() : tiers.get(0);
  }

  /** The next of {@code candidates} in this model's one turn order, by replica index. */
  private int inTurn(String model, List<Integer> candidates) {
    List<Integer> sorted = new ArrayList<>(candidates);
    sorted.sort(null); // turns go round the replica indices, whatever their liveness order
    int turn = turns.computeIfAbsent(model, k -> new AtomicInteger()).getAndIncrement();
    return sorted.get(Math.floorMod(turn, sorted.size()));
  }

  /**
   * Asks each restarting replica of {@code model} for its status (one ask in flight per replica):
   * the answer comes once it runs again (sharding holds the ask until then), and makes it a
   * candidate again although no request was sent to it meanwhile.
   */
  private void probeRestarting(ServedModel model) {
    for (String id : liveness.restarting(model.name(), model.replicas())) {
      if (!probing.add(id)) continue;
      Stages.on(
              system,
              AskPattern.<Command, WorkerStatus>ask(
                  refs.apply(id),
                  ModelWorkerProtocol.GetStatus::new,
                  askTimeout,
                  system.scheduler()))
          .whenComplete(
              (status, failure) -> {
                probing.remove(id);
                if (failure == null) liveness.confirmed(id);
              });
    }
  }

  private static ApiException noDecoder(ServedModel model) {
    return ApiException.overloaded(
        "No replica of model `"
            + model.name()
            + "` that serves whole requests or decode legs is reachable right now (the reachable"
            + " ones are prefill-only: --kv-role prefill); retry later.");
  }

  private static ApiException noneReachable(ServedModel model) {
    return ApiException.overloaded(
        "No replica of model `" + model.name() + "` is reachable right now; retry later.");
  }

  // ------------------------------------------------------------------ every replica

  /** Replica {@code index} of {@code model}, reachable or not (a metrics scrape asks them all). */
  public Replica replica(ServedModel model, int index) {
    String id = model.entityId(index);
    return new Replica(id, refs.apply(id));
  }

  /** The indices of {@code model}'s replicas this gateway can reach now, best first. */
  public List<Integer> reachable(ServedModel model) {
    List<Integer> all = new ArrayList<>();
    for (List<Integer> tier : liveness.tiers(model.name(), model.replicas())) all.addAll(tier);
    return all;
  }

  // ------------------------------------------------------------------ a generation's attempts

  /**
   * How a generation on {@code model} reaches, watches and replaces its workers: its first attempt
   * goes to {@code first} (the routing decision), a continuation after a lost worker to a reachable
   * replica in turn, preferring ones the request has not lost. (Continuations are not routed by
   * cache: the decision was for the original prompt, and a lost worker's replica is gone.)
   */
  public Attempts attempts(ServedModel model, Destination first) {
    AtomicBoolean firstTaken = new AtomicBoolean();
    return new Attempts() {
      @Override
      public String model() {
        return model.name();
      }

      @Override
      public Optional<Replica> next(Set<String> avoid) {
        if (!firstTaken.getAndSet(true) && !avoid.contains(first.replica().entityId()))
          return Optional.of(first.replica());
        return ReplicaSelector.this.next(model, avoid);
      }

      @Override
      public boolean reachable(ActorRef<?> worker) {
        return liveness.reachable(worker.path().address());
      }

      @Override
      public void located(String entityId, ActorRef<?> worker) {
        liveness.located(entityId, worker);
      }

      @Override
      public void unacknowledged(String entityId) {
        liveness.unacknowledged(entityId);
      }

      @Override
      public Address lastSeenAt(String entityId) {
        return liveness.location(entityId);
      }
    };
  }

  /**
   * What a generation's owner asks of the replicas while it runs, and tells them: the replica for
   * each attempt, and what it learns of their reachability (a worker's actor locates its replica; a
   * replica that does not acknowledge in time is avoided by new requests until it answers again).
   */
  public interface Attempts {
    /** The model's name, for messages. */
    String model();

    /**
     * The replica of the next attempt: a reachable one, preferring those not in {@code avoid}
     * (replicas this request already lost or left); empty when none is reachable now.
     */
    Optional<Replica> next(Set<String> avoid);

    /** False while {@code worker}'s node is unreachable, downed or removed. */
    boolean reachable(ActorRef<?> worker);

    /**
     * Replica {@code entityId} runs in {@code worker} (from its {@code Accepted}/{@code Started}).
     */
    void located(String entityId, ActorRef<?> worker);

    /** Replica {@code entityId} did not acknowledge an attempt in time. */
    void unacknowledged(String entityId);

    /** The node replica {@code entityId} was last seen on, or null. */
    Address lastSeenAt(String entityId);

    /** One fixed replica, always reachable, nothing learnt: tests and tools. */
    static Attempts only(Replica replica) {
      return new Attempts() {
        @Override
        public String model() {
          return "the model";
        }

        @Override
        public Optional<Replica> next(Set<String> avoid) {
          return Optional.of(replica);
        }

        @Override
        public boolean reachable(ActorRef<?> worker) {
          return true;
        }

        @Override
        public void located(String entityId, ActorRef<?> worker) {}

        @Override
        public void unacknowledged(String entityId) {}

        @Override
        public Address lastSeenAt(String entityId) {
          return null;
        }
      };
    }
  }

  // ------------------------------------------------------------------ values

  /**
   * A replica and how to reach it.
   *
   * @param entityId {@code model#replica}
   */
  public record Replica(String entityId, RecipientRef<Command> ref) {}

  /**
   * A generation's replica and why it was chosen.
   *
   * @param replica the chosen replica
   * @param request what to send it
   * @param decision the routing decision (replica index, reason, expected cached tokens)
   * @param lease the request's place in the replica's in-flight count, until closed
   * @param prefill the request's prefill leg, or null: served whole
   */
  public record Destination(
      Replica replica,
      GenerationRequest request,
      RouteDecision decision,
      Lease lease,
      Prefill prefill) {

    /** A request served whole. */
    public Destination(
        Replica replica, GenerationRequest request, RouteDecision decision, Lease lease) {
      this(replica, request, decision, lease, null);
    }
  }

  /**
   * Where a disaggregated request's prefill leg runs.
   *
   * @param replica the prefill replica
   * @param lease the leg's place in that replica's in-flight count (its queue for the decider),
   *     until closed: when the leg ends
   */
  public record Prefill(Replica replica, Lease lease) {}

  /** A request's hold on a replica's in-flight count; closing it again does nothing. */
  public interface Lease extends AutoCloseable {
    @Override
    void close();
  }

  /** Where routing decisions are counted ({@code troupe:routing_decisions_total} in /metrics). */
  @FunctionalInterface
  public interface Recorder {

    /** {@code model}'s replica {@code replica} was chosen for {@code reason}. */
    void routed(String model, int replica, String reason);

    /**
     * A request of a model with prefill/decode roles was split ({@link
     * RouteDecision#PD_DISAGGREGATED}) or served whole, and why ({@code PD_*}).
     */
    default void disaggregation(String model, String decision) {}

    /** Counts nothing. */
    Recorder NONE = (model, replica, reason) -> {};
  }

  /** The bound on a message to a model worker ({@link MessageBound}). */
  public MessageBound bound() {
    return bound;
  }
}
