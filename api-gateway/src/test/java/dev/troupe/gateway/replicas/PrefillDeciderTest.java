package dev.troupe.gateway.replicas;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.gateway.http.ApiException;
import dev.troupe.gateway.metrics.ServingMetrics;
import dev.troupe.protocol.cluster.GenerationRequest;
import dev.troupe.protocol.cluster.KvRole;
import dev.troupe.protocol.cluster.KvTransfer;
import dev.troupe.protocol.cluster.SamplingParams;
import dev.troupe.protocol.kv.BlockHash;
import dev.troupe.protocol.kv.BlockHasher;
import dev.troupe.protocol.kv.CacheReports;
import dev.troupe.protocol.kv.CacheReports.CacheReport;
import dev.troupe.protocol.kv.CacheReports.ReplicaLoad;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * Roles and the per-request prefill/decode decision, through the one selector: a table fed with the
 * replicas' reports (their roles, cached blocks and queues), prompts given as token ids.
 */
class PrefillDeciderTest {
  private static final ActorTestKit KIT = ActorTestKit.create();

  @AfterAll
  static void stopKit() {
    KIT.shutdownTestKit();
  }

  private static final int BS = 16;
  private static final int THRESHOLD = 64;
  private static final ServedModel M = new ServedModel("m", 3, "m", null, 0);
  private final long[] clock = {0};
  private final RoutingTable table = new RoutingTable(() -> clock[0]);
  private final Map<Integer, Long> seqs = new HashMap<>();
  private final BlockHasher hasher = new BlockHasher();
  private final ServingMetrics metrics = new ServingMetrics();

  private ReplicaSelector selector(DisaggregationSettings pd, boolean cacheAware) {
    return new ReplicaSelector(
        KIT.system(),
        id -> null,
        Liveness.assumeAllLive(),
        table,
        RoutingSettings.DEFAULTS.withCacheAware(cacheAware).withDisaggregation(pd),
        metrics.recorder(),
        PromptTokenizer.NONE,
        Duration.ofSeconds(1));
  }

  private ReplicaSelector selector() {
    return selector(new DisaggregationSettings(true, THRESHOLD, 2), true);
  }

  /** Replica {@code r} reports its role, {@code stored} blocks and {@code waiting} requests. */
  private void report(int r, KvRole role, List<BlockHash> stored, int waiting) {
    long seq = seqs.merge(r, 1L, Long::sum);
    table.apply(
        new CacheReport(
            "m#" + r,
            "inc-" + r,
            seq,
            false,
            BS,
            CacheReports.pack(stored),
            null,
            new ReplicaLoad(waiting, 0, 160L * waiting, 0, 1000, List.of()),
            role));
  }

  private void roles(KvRole r0, KvRole r1, KvRole r2) {
    report(0, r0, List.of(), 0);
    report(1, r1, List.of(), 0);
    report(2, r2, List.of(), 0);
  }

  private static int[] tokens(int n) {
    return IntStream.range(7, 7 + n).toArray();
  }

  private static GenerationRequest.Builder request(int[] ids) {
    return GenerationRequest.builder("r")
        .prompt("")
        .promptTokenIds(IntStream.of(ids).boxed().toList());
  }

  private static ReplicaSelector.Destination routed(
      ReplicaSelector s, GenerationRequest r, boolean echo) throws Exception {
    return s.route(M, r, 4096, echo).toCompletableFuture().get(5, TimeUnit.SECONDS);
  }

  private static ReplicaSelector.Destination routed(ReplicaSelector s, int[] prompt)
      throws Exception {
    return routed(s, request(prompt).build(), false);
  }

  private String scrape() throws Exception {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    new PrometheusTextFormatWriter(false).write(out, metrics.scrape());
    return out.toString(StandardCharsets.UTF_8);
  }

  @Test
  void aLongPromptIsPrefilledOnThePrefillReplicaAndDecodedOnTheDecodeOne() throws Exception {
    roles(KvRole.PREFILL, KvRole.DECODE, KvRole.DECODE);
    ReplicaSelector.Destination d = routed(selector(), tokens(200));
    assertTrue(d.decision().replica() == 1 || d.decision().replica() == 2, d.decision().toString());
    assertEquals(RouteDecision.PD_DISAGGREGATED, d.decision().disaggregation());
    assertEquals(0, d.decision().prefillReplica());
    assertEquals("m#0", d.prefill().replica().entityId());
    assertTrue(
        d.decision().headerValue().endsWith("; disaggregation=disaggregated; prefill_replica=0"),
        d.decision().headerValue());
    // The leg counts in the prefill replica's queue until it ends.
    assertEquals(1, table.view("m", 0).inFlight());
    d.prefill().lease().close();
    assertEquals(0, table.view("m", 0).inFlight());
    d.lease().close();
    assertTrue(
        scrape()
            .contains(
                "troupe:disaggregation_decisions_total{decision=\"disaggregated\",model_name=\"m\"}"
                    + " 1.0"),
        scrape());
  }

  @Test
  void aPromptAtOrBelowTheThresholdIsServedWhole() throws Exception {
    roles(KvRole.PREFILL, KvRole.DECODE, KvRole.DECODE);
    ReplicaSelector s = selector();
    ReplicaSelector.Destination at = routed(s, tokens(THRESHOLD));
    assertNull(at.prefill());
    assertEquals(RouteDecision.PD_BELOW_THRESHOLD, at.decision().disaggregation());
    assertEquals(-1, at.decision().prefillReplica());
    assertNotEquals0(at);
    assertTrue(routed(s, tokens(THRESHOLD + 1)).decision().disaggregated());
    // 0 = always, however short
    ReplicaSelector always = selector(new DisaggregationSettings(true, 0, 2), true);
    assertTrue(routed(always, tokens(3)).decision().disaggregated());
  }

  private static void assertNotEquals0(ReplicaSelector.Destination d) {
    assertFalse(d.decision().replica() == 0, "a prefill-only replica took a whole request");
  }

  @Test
  void tokensCachedOnTheDecodeReplicaDoNotCount() throws Exception {
    int[] prompt = tokens(200); // 12 full blocks and 8 tokens
    List<BlockHash> chain = hasher.chain(prompt, BS, null, null);
    report(0, KvRole.PREFILL, List.of(), 0);
    report(1, KvRole.DECODE, chain.subList(0, 10), 0); // 160 cached: 40 to compute
    report(2, KvRole.DECODE, List.of(), 0);
    ReplicaSelector s = selector();
    ReplicaSelector.Destination d = routed(s, prompt);
    assertEquals(1, d.decision().replica(), "the decode replica with the prefix");
    assertEquals(160, d.decision().cachedTokens());
    assertEquals(RouteDecision.PD_BELOW_THRESHOLD, d.decision().disaggregation());
    assertNull(d.prefill());
    d.lease().close();
    // Restarted with 6 of the blocks: 104 tokens to compute, above the threshold.
    table.apply(
        new CacheReport(
            "m#1",
            "inc-1b",
            1,
            false,
            BS,
            CacheReports.pack(chain.subList(0, 6)),
            null,
            new ReplicaLoad(0, 0, 0, 0, 1000, List.of()),
            KvRole.DECODE));
    ReplicaSelector.Destination half = routed(s, prompt);
    assertEquals(1, half.decision().replica());
    assertEquals(96, half.decision().cachedTokens());
    assertTrue(half.decision().disaggregated());
  }

  @Test
  void aLongPrefillQueueKeepsRequestsWhole() throws Exception {
    report(0, KvRole.PREFILL, List.of(), 2); // reports two waiting: at max-prefill-queue
    report(1, KvRole.DECODE, List.of(), 0);
    report(2, KvRole.DECODE, List.of(), 0);
    ReplicaSelector s = selector();
    assertEquals(
        RouteDecision.PD_PREFILL_QUEUE_FULL, routed(s, tokens(200)).decision().disaggregation());
    // Its queue drains; this gateway's own legs in flight then fill it before any report does.
    report(0, KvRole.PREFILL, List.of(), 0);
    List<String> decisions = new ArrayList<>();
    for (int i = 0; i < 3; i++) decisions.add(routed(s, tokens(200)).decision().disaggregation());
    assertEquals(
        List.of(
            RouteDecision.PD_DISAGGREGATED,
            RouteDecision.PD_DISAGGREGATED,
            RouteDecision.PD_PREFILL_QUEUE_FULL),
        decisions);
  }

  @Test
  void theCheapestOpenPrefillReplicaTakesTheLeg() throws Exception {
    // Replica 0 has a prompt queued (its load), replica 1 nothing.
    report(0, KvRole.PREFILL, List.of(), 1);
    report(1, KvRole.PREFILL, List.of(), 0);
    report(2, KvRole.DECODE, List.of(), 0);
    ReplicaSelector.Destination d = routed(selector(), tokens(200));
    assertEquals(2, d.decision().replica());
    assertEquals(1, d.decision().prefillReplica());
  }

  @Test
  void requestsThatNeedPromptLogitsOrCarryTheirOwnTransferAreNeverSplit() throws Exception {
    roles(KvRole.PREFILL, KvRole.DECODE, KvRole.DECODE);
    ReplicaSelector s = selector();
    int[] prompt = tokens(200);
    List<GenerationRequest> kinds =
        List.of(
            request(prompt).sampling(SamplingParams.builder().promptLogprobs(1).build()).build(),
            request(prompt)
                .sampling(
                    SamplingParams.builder()
                        .n(2)
                        .useBeamSearch(true)
                        .temperature(0.0)
                        .maxTokens(4)
                        .build())
                .build(),
            request(prompt).kvTransfer(new KvTransfer.RemoteDecode()).build());
    for (GenerationRequest r : kinds) {
      ReplicaSelector.Destination d = routed(s, r, false);
      assertEquals(RouteDecision.PD_NOT_ELIGIBLE, d.decision().disaggregation(), r.toString());
      assertNull(d.prefill());
    }
    ReplicaSelector.Destination echo = routed(s, request(prompt).build(), true);
    assertEquals(RouteDecision.PD_NOT_ELIGIBLE, echo.decision().disaggregation());
    assertTrue(routed(s, request(prompt).build(), false).decision().disaggregated());
  }

  @Test
  void thePrefillReplicaIsNeverTheDecodeReplica() throws Exception {
    // The both replica is the cheapest decode choice (it holds the prefix); the other replica
    // only decodes: nothing else can prefill.
    int[] prompt = tokens(200);
    List<BlockHash> chain = hasher.chain(prompt, BS, null, null);
    report(0, KvRole.BOTH, chain.subList(0, 2), 0);
    report(1, KvRole.DECODE, List.of(), 0);
    report(2, KvRole.DECODE, List.of(), 0);
    ReplicaSelector.Destination d = routed(selector(), prompt);
    assertEquals(0, d.decision().replica());
    assertEquals(RouteDecision.PD_NO_PREFILL_REPLICA, d.decision().disaggregation());
    assertNull(d.prefill());
  }

  @Test
  void prefillOnlyReplicasTakeNoWholeRequests() throws Exception {
    roles(KvRole.PREFILL, KvRole.DECODE, KvRole.PREFILL);
    ReplicaSelector s = selector(new DisaggregationSettings(true, 100_000, 2), true);
    for (int i = 0; i < 6; i++) {
      ReplicaSelector.Destination d = routed(s, tokens(20 + i));
      assertEquals(1, d.decision().replica());
      d.lease().close();
    }
    // Round robin keeps to the decoders as well.
    ReplicaSelector rr = selector(new DisaggregationSettings(true, 100_000, 2), false);
    for (int i = 0; i < 4; i++) assertEquals(1, routed(rr, tokens(20)).decision().replica());
    // With every replica prefill-only there is nothing to serve a whole request: a 503.
    report(1, KvRole.PREFILL, List.of(), 0);
    ExecutionException e =
        org.junit.jupiter.api.Assertions.assertThrows(
            ExecutionException.class, () -> routed(s, tokens(20)));
    ApiException api = (ApiException) e.getCause();
    assertEquals(503, api.status(), api.getMessage());
    assertTrue(api.getMessage().contains("prefill-only"), api.getMessage());
  }

  @Test
  void aClientsOwnPrefillHalfGoesToAPrefillReplicaAndItsDecodeHalfToADecodeReplica()
      throws Exception {
    roles(KvRole.PREFILL, KvRole.DECODE, KvRole.DECODE);
    ReplicaSelector s = selector();
    for (int i = 0; i < 3; i++) {
      ReplicaSelector.Destination half =
          routed(s, request(tokens(200)).kvTransfer(new KvTransfer.RemoteDecode()).build(), false);
      assertEquals(0, half.decision().replica(), "the prefill half on the prefill replica");
      assertNull(half.prefill());
      half.lease().close();
    }
    KvTransfer.RemotePrefill pulled =
        new KvTransfer.RemotePrefill("e", List.of(1, 2), "127.0.0.1", 7001, "r", 1);
    ReplicaSelector.Destination decode =
        routed(s, request(tokens(200)).kvTransfer(pulled).build(), false);
    assertNotEquals0(decode);
    assertEquals(RouteDecision.PD_NOT_ELIGIBLE, decode.decision().disaggregation());
  }

  @Test
  void withoutDeclaredRolesOrWithTheSwitchOffNothingIsSplit() throws Exception {
    roles(KvRole.BOTH, KvRole.BOTH, KvRole.BOTH);
    ReplicaSelector.Destination d = routed(selector(), tokens(500));
    assertNull(d.prefill());
    assertNull(d.decision().disaggregation(), "a model without roles shows no decision");
    assertEquals("replica=0; reason=least_loaded; cached_tokens=0", d.decision().headerValue());
    roles(KvRole.PREFILL, KvRole.DECODE, KvRole.DECODE);
    ReplicaSelector off = selector(new DisaggregationSettings(false, 0, 2), true);
    List<Integer> chosen = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      ReplicaSelector.Destination whole = routed(off, tokens(500));
      assertNull(whole.prefill());
      chosen.add(whole.decision().replica());
    }
    assertTrue(chosen.contains(0), "off: roles are ignored, the prefill replica serves too");
  }
}
