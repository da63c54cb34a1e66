package dev.troupe.gateway.replicas;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.gateway.metrics.ServingMetrics;
import dev.troupe.protocol.cluster.GenerationRequest;
import dev.troupe.protocol.kv.BlockHash;
import dev.troupe.protocol.kv.BlockHasher;
import dev.troupe.protocol.kv.CacheReports;
import dev.troupe.protocol.kv.CacheReports.CacheReport;
import dev.troupe.protocol.kv.CacheReports.ReplicaLoad;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/** The routing decision on its own: a table fed with reports, a fake clock. */
class CacheAwareRoutingTest {
  private static final ActorTestKit KIT = ActorTestKit.create();

  @AfterAll
  static void stopKit() {
    KIT.shutdownTestKit();
  }

  private static final int BS = 16;
  private static final List<Integer> TWO = List.of(0, 1);
  private final long[] clock = {0};
  private final RoutingTable table = new RoutingTable(() -> clock[0]);
  private final RoutingSettings settings = RoutingSettings.DEFAULTS;
  private final CacheAwareRouting routing = new CacheAwareRouting(table, settings);
  private final Map<Integer, Long> seqs = new HashMap<>();
  private final BlockHasher hasher = new BlockHasher();

  private static int[] tokens(int first, int n) {
    return IntStream.range(first, first + n).toArray();
  }

  private static ReplicaLoad load(int kvUsed, String... adapters) {
    return new ReplicaLoad(0, 0, 0, kvUsed, 1000, List.of(adapters));
  }

  /** Replica {@code r} of model m reports {@code stored} added, with {@code load}. */
  private boolean report(int r, List<BlockHash> stored, ReplicaLoad load) {
    long seq = seqs.merge(r, 1L, Long::sum);
    return table.apply(
        new CacheReport(
            "m#" + r, "inc-" + r, seq, false, BS, CacheReports.pack(stored), null, load));
  }

  private RouteDecision route(int[] prompt, String adapter) {
    return routing.choose(
        new RouteRequest(
            "m", TWO, hasher.chain(prompt, BS, adapter, null), prompt.length, adapter));
  }

  @Test
  void theReplicaHoldingTheLongestPrefixWins() {
    int[] prompt = tokens(0, 200); // 12 full blocks + 8 tokens
    List<BlockHash> chain = hasher.chain(prompt, BS, null, null);
    report(0, chain.subList(0, 3), load(0));
    report(1, chain.subList(0, 10), load(0));
    RouteDecision d = route(prompt, null);
    assertEquals(1, d.replica());
    assertEquals(RouteDecision.PREFIX, d.reason());
    assertEquals(160, d.cachedTokens());
    assertEquals("replica=1; reason=prefix; cached_tokens=160", d.headerValue());
  }

  @Test
  void theBlockOfTheLastPromptTokenIsNeverCountedAsAHit() {
    int[] prompt = tokens(0, 2 * BS);
    report(0, hasher.chain(prompt, BS, null, null), load(0));
    report(1, List.of(), load(0));
    assertEquals(BS, route(prompt, null).cachedTokens());
  }

  @Test
  void loadOutweighsAShortHit() {
    int[] prompt = tokens(0, 200);
    List<BlockHash> chain = hasher.chain(prompt, BS, null, null);
    report(0, List.of(), load(0));
    report(1, chain.subList(0, 4), load(30)); // 4 blocks saved, 30 blocks of load
    RouteDecision d = route(prompt, null);
    assertEquals(0, d.replica());
    assertEquals(RouteDecision.LOAD, d.reason());
    assertEquals(64, d.bestCachedTokens());
  }

  @Test
  void aBurstOfOnePromptSpreadsOnceTheHitNoLongerPaysForTheQueue() {
    int[] prompt = tokens(0, 64); // 4 blocks, 3 can hit
    report(0, List.of(), load(0));
    report(1, hasher.chain(prompt, BS, null, null), load(0));
    List<ReplicaSelector.Lease> leases = new ArrayList<>();
    List<String> reasons = new ArrayList<>();
    int[] counts = new int[2];
    for (int i = 0; i < 8; i++) {
      RouteDecision d = route(prompt, null);
      counts[d.replica()]++;
      reasons.add(d.reason());
      leases.add(table.started("m", d.replica(), 4));
    }
    assertEquals(RouteDecision.PREFIX, reasons.get(0));
    assertTrue(reasons.contains(RouteDecision.LOAD), reasons::toString);
    assertTrue(counts[0] >= 3 && counts[1] >= 3, () -> counts[0] + "/" + counts[1]);
    leases.forEach(ReplicaSelector.Lease::close);
    leases.get(0).close(); // idempotent
    assertEquals(0, table.view("m", 1).inFlight());
    assertEquals(0, table.view("m", 1).inFlightBlocks());
    assertEquals(1, route(prompt, null).replica(), "back to the hit once the queue drained");
  }

  @Test
  void withoutAnyHitTheLeastLoadedWinsAndTiesGoToTheLowerIndex() {
    report(0, List.of(), load(5));
    report(1, List.of(), load(2));
    RouteDecision d = route(tokens(0, 100), null);
    assertEquals(1, d.replica());
    assertEquals(RouteDecision.LEAST_LOADED, d.reason());
    report(1, List.of(), load(5));
    assertEquals(0, route(tokens(0, 100), null).replica());
    // An unknown prompt (no chain): load only.
    assertEquals(
        RouteDecision.LEAST_LOADED,
        routing.choose(new RouteRequest("m", TWO, List.of(), 0, null)).reason());
  }

  @Test
  void aCheckpointPrefersAReplicaWithItsAdapterLoaded() {
    report(0, List.of(), load(3));
    report(1, List.of(), load(10, "model-a:step4"));
    RouteDecision d = route(tokens(0, 100), "model-a:step4");
    assertEquals(1, d.replica());
    assertEquals(RouteDecision.ADAPTER, d.reason());
    // Not when the replica with the adapter is far busier than loading it elsewhere costs.
    report(1, List.of(), load(500, "model-a:step4"));
    assertEquals(0, route(tokens(0, 100), "model-a:step4").replica());
  }

  @Test
  void adapterAndSaltSeparateChainsSoOtherEntriesDoNotAttract() {
    int[] prompt = tokens(0, 200);
    report(0, List.of(), load(0));
    report(1, hasher.chain(prompt, BS, null, null), load(0));
    RouteDecision salted =
        routing.choose(
            new RouteRequest("m", TWO, hasher.chain(prompt, BS, null, "s"), prompt.length, null));
    assertEquals(0, salted.bestCachedTokens());
    assertEquals(0, route(prompt, "a:step1").bestCachedTokens());
  }

  @Test
  void staleReportsCountAsUnknown() {
    int[] prompt = tokens(0, 200);
    report(0, List.of(), load(0));
    report(1, hasher.chain(prompt, BS, null, null), load(0));
    clock[0] += Duration.ofSeconds(11).toNanos();
    report(0, List.of(), load(0)); // 0 keeps reporting, 1 went silent
    RouteDecision d = route(prompt, null);
    assertEquals(0, d.bestCachedTokens());
    assertEquals(0, d.replica());
  }

  @Test
  void reportsAreAppliedInSequenceAndGapsAskForASnapshot() {
    RoutingTable.View v = table.view("m", 0);
    BlockHash a = new BlockHash(1, 1);
    BlockHash b = new BlockHash(2, 2);
    ReplicaLoad l = load(0);
    // A replica seen first at seq 5 was running before: its history is unknown.
    assertTrue(apply(v, "x", 5, false, List.of(a), List.of(), l));
    assertFalse(apply(v, "x", 6, false, List.of(b), List.of(a), l));
    assertEquals(List.of(b), chainOf(v, a, b));
    assertFalse(apply(v, "x", 6, false, List.of(a), List.of(), l), "a duplicate is ignored");
    assertEquals(1, v.numCachedBlocks());
    assertTrue(apply(v, "x", 8, false, List.of(), List.of(), l), "seq 7 was lost");
    assertFalse(apply(v, "x", 9, true, List.of(a), List.of(), l), "a snapshot repairs it");
    assertEquals(1, v.numCachedBlocks());
    assertEquals(1, v.cachedBlocks(List.of(a, b)));
    // A restarted replica starts empty: its first report is complete.
    assertFalse(apply(v, "y", 1, false, List.of(b), List.of(), l));
    assertEquals(0, v.cachedBlocks(List.of(a)));
    assertEquals(1, v.cachedBlocks(List.of(b)));
  }

  private static boolean apply(
      RoutingTable.View v,
      String incarnation,
      long seq,
      boolean replace,
      List<BlockHash> stored,
      List<BlockHash> removed,
      ReplicaLoad load) {
    return v.apply(
        new CacheReport(
            "m#0",
            incarnation,
            seq,
            replace,
            BS,
            CacheReports.pack(stored),
            CacheReports.pack(removed),
            load),
        0);
  }

  private static List<BlockHash> chainOf(RoutingTable.View v, BlockHash... hashes) {
    List<BlockHash> held = new ArrayList<>();
    for (BlockHash h : hashes) if (v.cachedBlocks(List.of(h)) == 1) held.add(h);
    return held;
  }

  /** A selector over this test's table: model {@code m}'s two replicas, all assumed reachable. */
  private ReplicaSelector selector(
      RoutingSettings with, ReplicaSelector.Recorder recorder, PromptTokenizer tokenizer) {
    return new ReplicaSelector(
        KIT.system(), // nothing here asks a replica; the request's size is checked against it
        id -> null,
        Liveness.assumeAllLive(),
        table,
        with,
        recorder,
        tokenizer,
        Duration.ofSeconds(1));
  }

  private static final ServedModel M = new ServedModel("m", 2, "m", null, 0);

  private static ReplicaSelector.Destination routed(
      ReplicaSelector selector, ServedModel model, GenerationRequest request) throws Exception {
    return selector.route(model, request, 4096).toCompletableFuture().get(5, TimeUnit.SECONDS);
  }

  /** A request with the client's token ids (as /v1/completions sends them). */
  private static GenerationRequest withIds(
      int[] ids, GenerationRequest.Adapter adapter, String salt) {
    return GenerationRequest.builder("r")
        .prompt("")
        .promptTokenIds(IntStream.of(ids).boxed().toList())
        .adapter(adapter)
        .cacheSalt(salt)
        .build();
  }

  @Test
  void roundRobinTakesReplicasInTurn() throws Exception {
    ReplicaSelector rr =
        selector(
            settings.withCacheAware(false), ReplicaSelector.Recorder.NONE, PromptTokenizer.NONE);
    ServedModel three = new ServedModel("m3", 3, "m3", null, 0);
    GenerationRequest r = withIds(tokens(0, 40), null, null);
    List<Integer> chosen = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      ReplicaSelector.Destination d = routed(rr, three, r);
      assertEquals(RouteDecision.ROUND_ROBIN, d.decision().reason());
      assertEquals("m3#" + d.decision().replica(), d.replica().entityId());
      chosen.add(d.decision().replica());
    }
    assertEquals(List.of(0, 1, 2, 0), chosen);
  }

  @Test
  void theSelectorHashesTheTokensCountsTheDecisionAndHoldsALease() throws Exception {
    ServingMetrics metrics = new ServingMetrics();
    ReplicaSelector router = selector(settings, metrics::routed, PromptTokenizer.NONE);
    int[] prompt = tokens(0, 100);
    report(0, List.of(), load(0));
    report(1, hasher.chain(prompt, BS, "a:step1", "s"), load(0));
    GenerationRequest.Adapter adapter = new GenerationRequest.Adapter("a", 1, "/d");
    ReplicaSelector.Destination d = routed(router, M, withIds(prompt, adapter, "s"));
    assertEquals(1, d.decision().replica());
    assertEquals(RouteDecision.PREFIX, d.decision().reason());
    assertEquals(1, table.view("m", 1).inFlight());
    assertEquals(7, table.view("m", 1).inFlightBlocks());
    d.lease().close();
    assertEquals(0, table.view("m", 1).inFlight());
    ReplicaSelector.Destination unsalted = routed(router, M, withIds(prompt, adapter, null));
    assertEquals(0, unsalted.decision().bestCachedTokens(), "without the salt nothing matches");
    unsalted.lease().close();
    java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
    new io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter(false)
        .write(out, metrics.scrape());
    String text = out.toString(java.nio.charset.StandardCharsets.UTF_8);
    assertTrue(
        text.contains(
            "troupe:routing_decisions_total{engine=\"1\",model_name=\"m\",reason=\"prefix\"} 1.0"),
        text);
  }

  @Test
  void theSelectorTokenizesOffTheCallerAndFallsBackToLoadWhenItCannot() throws Exception {
    int[] prompt = tokens(0, 100);
    report(0, List.of(), load(0));
    report(1, hasher.chain(prompt, BS, null, "s"), load(0));
    GenerationRequest request =
        GenerationRequest.builder("r1")
            .messages(List.of(Map.of("role", "user", "content", "hi")))
            .cacheSalt("s")
            .build();
    ReplicaSelector router =
        selector(settings, ReplicaSelector.Recorder.NONE, (model, len, r) -> prompt.clone());
    ReplicaSelector.Destination d = routed(router, M, request);
    assertEquals(1, d.decision().replica());
    assertEquals(RouteDecision.PREFIX, d.decision().reason());
    assertEquals(100, d.request().promptTokenIds().size(), "the ids travel with the request");
    d.lease().close();
    ReplicaSelector failing =
        selector(
            settings,
            ReplicaSelector.Recorder.NONE,
            (model, len, r) -> {
              throw new IllegalStateException("template exploded");
            });
    ReplicaSelector.Destination fallback = routed(failing, M, request);
    assertEquals(RouteDecision.LEAST_LOADED, fallback.decision().reason());
    assertEquals(null, fallback.request().promptTokenIds());
    assertEquals(null, ReplicaSelector.adapterKey(null));
    assertEquals(null, ReplicaSelector.adapterKey(new GenerationRequest.Adapter("x", 0, null)));
    assertEquals(
        "x:step3", ReplicaSelector.adapterKey(new GenerationRequest.Adapter("x", 3, "/d")));
  }
}
