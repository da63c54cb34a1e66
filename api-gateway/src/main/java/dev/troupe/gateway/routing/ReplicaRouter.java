package dev.troupe.gateway.routing;

import dev.troupe.protocol.cluster.GenerationRequest;
import dev.troupe.protocol.kv.BlockHash;
import dev.troupe.protocol.kv.BlockHasher;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Props;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The gateway's replica choice: a {@link RoutingStrategy} over the {@link RoutingTable}, fed by one
 * {@link CacheReportSubscriber} per model. Tokenizes the prompt ({@link PromptTokenizer}, on a
 * small bounded pool off the HTTP threads), computes its block-hash chain (with the replicas' block
 * size, the adapter and the salt, as the workers do), decides, counts the request in flight until
 * its lease is closed, and records the decision (metric, DEBUG log). When the prompt cannot be
 * tokenized here (no tokenizer on this node, a template error, the pool full) it routes on load
 * alone. Thread-safe.
 */
public final class ReplicaRouter {
  private static final Logger log = LoggerFactory.getLogger(ReplicaRouter.class);
  private static final ThreadLocal<BlockHasher> HASHER = ThreadLocal.withInitial(BlockHasher::new);
  private final RoutingTable table;
  private final RoutingStrategy strategy;
  private final RoutingSettings settings;
  private final RouteRecorder recorder;
  private final PromptTokenizer tokenizer;
  private final ExecutorService tokenizing;

  public ReplicaRouter(
      RoutingTable table,
      RoutingStrategy strategy,
      RoutingSettings settings,
      RouteRecorder recorder,
      PromptTokenizer tokenizer) {
    this.table = table;
    this.strategy = strategy;
    this.settings = settings;
    this.recorder = recorder;
    this.tokenizer = tokenizer;
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
   * A router for {@code models}: cache-aware (subscribing to their cache reports on {@code system})
   * or round-robin, as {@code settings} say.
   */
  public static ReplicaRouter start(
      ActorSystem<?> system,
      Collection<String> models,
      RoutingSettings settings,
      RouteRecorder recorder,
      PromptTokenizer tokenizer) {
    RoutingTable table = new RoutingTable();
    if (!settings.cacheAware())
      return new ReplicaRouter(table, new RoundRobinRouting(), settings, recorder, tokenizer);
    int i = 0;
    for (String model : models)
      system.systemActorOf(
          CacheReportSubscriber.create(model, table, settings),
          "prefix-cache-reports-" + i++,
          Props.empty());
    return new ReplicaRouter(
        table, new CacheAwareRouting(table, settings), settings, recorder, tokenizer);
  }

  public RoutingSettings settings() {
    return settings;
  }

  public RoutingTable table() {
    return table;
  }

  /**
   * Tokenizes {@code request}'s prompt (only when routing is cache-aware), then chooses a replica
   * among {@code candidates} as {@link #route(String, List, int[], String, String)} does. The
   * result carries the token ids, for the worker to use instead of tokenizing again.
   *
   * @param maxModelLen the model's context length, as its workers report it
   */
  public CompletionStage<Routed> route(
      String model, List<Integer> candidates, GenerationRequest request, int maxModelLen) {
    String adapterKey = adapterKey(request.adapter());
    if (!settings.cacheAware())
      return CompletableFuture.completedFuture(
          route(model, candidates, null, adapterKey, request.cacheSalt()));
    if (request.promptTokenIds() != null) // the client sent ids (/v1/completions): no tokenizing
    return CompletableFuture.completedFuture(
          route(
              model,
              candidates,
              truncated(request.promptTokenIds(), request.truncatePromptTokens(), maxModelLen),
              adapterKey,
              request.cacheSalt()));
    CompletableFuture<int[]> ids;
    try {
      ids =
          CompletableFuture.supplyAsync(
              () -> tokenizer.promptTokenIds(model, maxModelLen, request), tokenizing);
    } catch (RejectedExecutionException full) {
      ids = CompletableFuture.completedFuture(null); // busy: route on load rather than wait
    }
    return ids.exceptionally(e -> null)
        .thenApply(t -> route(model, candidates, t, adapterKey, request.cacheSalt()));
  }

  /** The ids the worker will run: the last {@code truncate_prompt_tokens} of them when set. */
  private static int[] truncated(List<Integer> ids, Integer truncate, int maxModelLen) {
    int keep = truncate == null ? ids.size() : truncate == -1 ? maxModelLen : truncate;
    int from = Math.max(0, ids.size() - keep);
    return ids.subList(from, ids.size()).stream().mapToInt(Integer::intValue).toArray();
  }

  /**
   * The prefix-cache identity of a request's adapter: the checkpoint's name ({@code <model
   * id>:step<N>}), null for the base model (step 0 is the base model's weights).
   */
  public static String adapterKey(GenerationRequest.Adapter adapter) {
    return adapter == null || adapter.isBase() ? null : adapter.name();
  }

  /**
   * Chooses a replica and counts the request there until {@link Routed#lease()} is closed (close it
   * when the request ends, however it ends).
   *
   * @param candidates replica indices the request may go to
   * @param promptTokens the prompt's token ids, or null when not known (then load decides)
   * @param adapterKey the identity of the request's trained checkpoint, or null
   * @param salt the request's {@code cache_salt}, or null
   */
  public Routed route(
      String model, List<Integer> candidates, int[] promptTokens, String adapterKey, String salt) {
    int blockSize = table.blockSize(model);
    List<BlockHash> chain =
        promptTokens == null || blockSize == 0
            ? List.of()
            : HASHER.get().chain(promptTokens, blockSize, adapterKey, salt);
    int length = promptTokens == null ? 0 : promptTokens.length;
    RouteDecision decision =
        strategy.choose(new RouteRequest(model, candidates, chain, length, adapterKey));
    long promptBlocks = blockSize == 0 ? 0 : (length + blockSize - 1) / blockSize;
    ReplicaView.Lease lease = table.started(model, decision.replica(), promptBlocks);
    recorder.routed(model, decision.replica(), decision.reason());
    if (log.isDebugEnabled())
      log.debug(
          "route {}#{}: {} ({} prompt tokens, {} cached there, best {})",
          model,
          decision.replica(),
          decision.reason(),
          length,
          decision.cachedTokens(),
          decision.bestCachedTokens());
    return new Routed(decision, lease, promptTokens);
  }

  /**
   * A routing decision, the request's hold on the chosen replica's in-flight count, and the
   * prompt's token ids when the gateway tokenized it (else null).
   */
  public record Routed(RouteDecision decision, ReplicaView.Lease lease, int[] promptTokenIds) {}
}
