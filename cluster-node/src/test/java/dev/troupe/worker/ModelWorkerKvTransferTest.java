package dev.troupe.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import dev.troupe.engine.core.EngineSettings;
import dev.troupe.engine.serving.TestEngines;
import dev.troupe.node.NodeSettings;
import dev.troupe.protocol.cluster.GenerationRequest;
import dev.troupe.protocol.cluster.KvHandle;
import dev.troupe.protocol.cluster.KvTransfer;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.*;
import dev.troupe.protocol.cluster.SamplingParams;
import dev.troupe.protocol.cluster.ServedModels;
import dev.troupe.protocol.cluster.ServedModels.ServedModel;
import dev.troupe.scheduler.SchedulingPolicy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.TreeMap;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Disaggregated prefill/decode between two replicas over the node's real KV transfer server: a
 * prefill replica leases its prompt's blocks and reports them, a decode replica pulls them and
 * generates exactly what one replica doing both phases generates; leases end when pulled, expired
 * or given up, and refusals reach the request as clear errors. Every message is serialized.
 */
class ModelWorkerKvTransferTest {
  private static ActorTestKit testKit; // created in start: other tests share the helpers below
  private static final ServedModels MODELS =
      new ServedModels(List.of(new ServedModel("demo", "demo", 4, "fcfs")));
  private static final Duration WAIT = Duration.ofSeconds(60);
  private static int spawned;
  static final java.util.Map<String, dev.troupe.engine.serving.Engine> ENGINES =
      new java.util.concurrent.ConcurrentHashMap<>();

  static ActorTestKit kit(String policy) {
    return ActorTestKit.create(
        ConfigFactory.parseString(
                "pekko.actor.serialize-messages = on\n"
                    + "troupe.worker.input.threads = 1\n"
                    + "troupe.kv-transfer { host = \"127.0.0.1\", lease = 2s, load-failure-policy = "
                    + policy
                    + " }")
            .withFallback(ConfigFactory.load()));
  }

  @BeforeAll
  static void start() {
    testKit = kit("fail");
  }

  @AfterAll
  static void stop() {
    testKit.shutdownTestKit();
  }

  /** A replica with its own runner (the test runners are shared per shape: blocks differ). */
  static ActorRef<Command> spawn(ActorTestKit kit, String id, EngineSettings settings) {
    EngineSettings own = settings.withNumBlocks(64 + spawned++);
    EngineProvider engines =
        (model, replica) -> {
          var engine = TestEngines.demo(own, SchedulingPolicy.FCFS);
          ENGINES.put(id, engine); // the test reads its counters after a request ends
          return engine;
        };
    return kit.spawn(
        ModelWorker.create(id, MODELS, engines, Duration.ZERO),
        DispatcherSelector.fromConfig(NodeSettings.WORKER_DISPATCHER));
  }

  static List<Integer> prompt(int length) {
    Random r = new Random(length);
    List<Integer> ids = new ArrayList<>();
    for (int i = 0; i < length; i++) ids.add(10 + r.nextInt(200));
    return ids;
  }

  static GenerationRequest request(String id, List<Integer> prompt, SamplingParams p) {
    return GenerationRequest.builder(id).prompt("").promptTokenIds(prompt).sampling(p).build();
  }

  static List<GenerationEvent> run(ActorTestKit kit, ActorRef<Command> w, GenerationRequest r) {
    TestProbe<GenerationEvent> probe = kit.createTestProbe();
    w.tell(new Generate(r, probe.ref()));
    List<GenerationEvent> events = new ArrayList<>();
    while (true) {
      GenerationEvent e = probe.receiveMessage(WAIT);
      events.add(e);
      if (e instanceof Failed || ((GenerationUpdate) e).done()) return events;
    }
  }

  /** Each choice's token ids, by index. */
  static List<List<Integer>> tokens(List<GenerationEvent> events) {
    TreeMap<Integer, List<Integer>> byChoice = new TreeMap<>();
    for (GenerationEvent e : events) {
      GenerationUpdate u = assertInstanceOf(GenerationUpdate.class, e, events.toString());
      for (ChoiceUpdate c : u.choices())
        byChoice.computeIfAbsent(c.index(), k -> new ArrayList<>()).addAll(c.tokenIds());
    }
    return new ArrayList<>(byChoice.values());
  }

  static GenerationUpdate last(List<GenerationEvent> events) {
    return assertInstanceOf(
        GenerationUpdate.class, events.get(events.size() - 1), events.toString());
  }

  static int blocksUsed(ActorTestKit kit, ActorRef<Command> worker) {
    TestProbe<dev.troupe.protocol.cluster.WorkerStatus> probe = kit.createTestProbe();
    worker.tell(new GetStatus(probe.ref()));
    return probe.receiveMessage(WAIT).kvBlocksUsed();
  }

  /** The replica's KV transfer counters, as its status reports them. */
  static dev.troupe.protocol.cluster.WorkerStatus.KvTransferStats kvStats(
      ActorTestKit kit, ActorRef<Command> worker) {
    TestProbe<dev.troupe.protocol.cluster.WorkerStatus> probe = kit.createTestProbe();
    worker.tell(new GetStatus(probe.ref()));
    return probe.receiveMessage(WAIT).details().kvTransfer();
  }

  /** vLLM's proxy: prefill with max_tokens 1, then the original request with the params. */
  static KvHandle prefill(ActorTestKit kit, ActorRef<Command> p, String id, List<Integer> ids) {
    SamplingParams one = SamplingParams.builder().temperature(0.0).maxTokens(1).build();
    GenerationRequest r = request(id, ids, one).withKvTransfer(new KvTransfer.RemoteDecode());
    KvHandle handle = last(run(kit, p, r)).kvHandle();
    assertNotNull(handle, "the prefill's last update says where its blocks are");
    return handle;
  }

  static final SamplingParams GREEDY =
      SamplingParams.builder().temperature(0.0).maxTokens(12).ignoreEos(true).build();
  static final SamplingParams SEEDED_N2 =
      SamplingParams.builder().temperature(0.9).seed(7L).n(2).maxTokens(12).ignoreEos(true).build();

  @ParameterizedTest
  @ValueSource(ints = {1, 7, 32, 70}) // one token, a partial block, exactly 2 blocks, > 4 blocks
  void decodeAfterARemotePrefillGeneratesWhatOneReplicaDoes(int length) {
    ActorRef<Command> reference = spawn(testKit, "demo#0", EngineSettings.small());
    ActorRef<Command> p = spawn(testKit, "demo#1", EngineSettings.small());
    ActorRef<Command> d = spawn(testKit, "demo#2", EngineSettings.small());
    assertEquals(0, blocksUsed(testKit, d)); // loaded: its engine exists
    List<Integer> ids = prompt(length);
    int positions = length - 1; // the decode side computes the last prompt token itself
    int[] pulled = {(positions + 15) / 16, (positions + 15) / 16 - positions / 16};
    for (SamplingParams sampling : List.of(GREEDY, SEEDED_N2)) {
      String tag = length + "-" + sampling.n();
      long importedBefore = ENGINES.get("demo#2").core().importedBlocks();
      var pulledBefore = kvStats(testKit, d);
      var servedBefore = kvStats(testKit, p);
      List<List<Integer>> expected =
          tokens(run(testKit, reference, request("ref-" + tag, ids, sampling)));
      KvHandle handle = prefill(testKit, p, "pre-" + tag, ids);
      assertEquals((length + 15) / 16, handle.remoteBlockIds().size(), "the prompt's blocks");
      assertEquals("pre-" + tag, handle.remoteRequestId());
      assertTrue(handle.remoteEngineId().startsWith("demo#1@"), handle.remoteEngineId());
      assertTrue(blocksUsed(testKit, p) >= handle.remoteBlockIds().size(), "leased, not freed");
      GenerationRequest decode =
          request("dec-" + tag, ids, sampling).withKvTransfer(handle.toRemotePrefill());
      List<GenerationEvent> events = run(testKit, d, decode);
      assertEquals(expected, tokens(events), "P/D generates what one replica does: " + tag);
      // the first decode pulls every block; the second finds the full ones in its own cache
      assertEquals(
          pulled[sampling.n() == 1 ? 0 : 1],
          ENGINES.get("demo#2").core().importedBlocks() - importedBefore,
          "blocks pulled: " + tag);
      // the counters grow by exactly the bytes of the blocks that travelled, on both sides
      long bytes =
          pulled[sampling.n() == 1 ? 0 : 1] * ENGINES.get("demo#2").core().kvLayout().blockBytes();
      var pulledAfter = kvStats(testKit, d);
      var servedAfter = kvStats(testKit, p);
      assertEquals(bytes, pulledAfter.pulledBytes() - pulledBefore.pulledBytes(), "pulled " + tag);
      assertEquals(bytes, servedAfter.servedBytes() - servedBefore.servedBytes(), "served " + tag);
      assertEquals(0, pulledAfter.servedBytes() - pulledBefore.servedBytes(), "d served none");
      assertEquals(0, servedAfter.pulledBytes() - servedBefore.pulledBytes(), "p pulled none");
      assertEquals(
          1,
          pulledAfter.pullSeconds().count() - pulledBefore.pullSeconds().count(),
          "one pull timed: " + tag);
      assertNull(last(events).kvHandle(), "a decode holds nothing for anyone");
      assertEquals(0, blocksUsed(testKit, p), "the pull ended the lease: its blocks are free");
      assertEquals(0, blocksUsed(testKit, d), "the decode's blocks are free after it");
    }
    for (ActorRef<Command> w : List.of(reference, p, d)) testKit.stop(w);
  }

  @Test
  void anAdapterAndAStructuredOutputComposeAndTheAdapterIsPartOfTheLayout(
      @org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) {
    var store = new dev.troupe.adapters.CheckpointStore(dir);
    var adapter =
        new GenerationRequest.Adapter(
            ModelWorkerAdapterTest.MODEL_ID,
            1,
            ModelWorkerAdapterTest.writeRandom(store, 1, 11).toString());
    ActorRef<Command> reference = spawn(testKit, "demo#0", EngineSettings.small());
    ActorRef<Command> p = spawn(testKit, "demo#1", EngineSettings.small());
    ActorRef<Command> d = spawn(testKit, "demo#2", EngineSettings.small());
    List<Integer> ids = prompt(40);
    SamplingParams one = SamplingParams.builder().temperature(0.0).maxTokens(1).build();
    // a LoRA adapter on both halves
    List<List<Integer>> expected =
        tokens(run(testKit, reference, request("ref-a", ids, GREEDY).withAdapter(adapter)));
    KvHandle handle =
        last(run(
                testKit,
                p,
                request("pre-a", ids, one)
                    .withAdapter(adapter)
                    .withKvTransfer(new KvTransfer.RemoteDecode())))
            .kvHandle();
    assertEquals(
        expected,
        tokens(
            run(
                testKit,
                d,
                request("dec-a", ids, GREEDY)
                    .withAdapter(adapter)
                    .withKvTransfer(handle.toRemotePrefill()))));
    // the adapter's identity is part of the layout: its blocks are not the base model's
    KvHandle adapted =
        last(run(
                testKit,
                p,
                request("pre-b", ids, one)
                    .withAdapter(adapter)
                    .withKvTransfer(new KvTransfer.RemoteDecode())))
            .kvHandle();
    Failed mismatch =
        assertInstanceOf(
            Failed.class,
            run(testKit, d, request("dec-b", ids, GREEDY).withKvTransfer(adapted.toRemotePrefill()))
                .get(0));
    assertTrue(mismatch.message().contains("adapter=base"), mismatch.message());
    assertEquals(0, blocksUsed(testKit, p), "the refused pull ended the lease");
    // cache_salt: the decode side's blocks of this prompt are another tenant's, so it pulls all
    List<Integer> salted = prompt(48);
    long before = ENGINES.get("demo#2").core().importedBlocks();
    KvHandle plain = prefill(testKit, p, "pre-s1", salted);
    run(testKit, d, request("dec-s1", salted, GREEDY).withKvTransfer(plain.toRemotePrefill()));
    KvHandle again = prefill(testKit, p, "pre-s2", salted);
    GenerationRequest withSalt =
        request("dec-s2", salted, GREEDY).toBuilder().cacheSalt("tenant-b").build();
    assertEquals(
        tokens(run(testKit, reference, request("ref-s", salted, GREEDY))),
        tokens(run(testKit, d, withSalt.withKvTransfer(again.toRemotePrefill()))));
    assertEquals(
        2 * 3, // 47 positions: 3 blocks each time, none found under another salt
        ENGINES.get("demo#2").core().importedBlocks() - before,
        "a salted request does not take an unsalted prefix");
    // a structured output (a choice) on the decode half
    SamplingParams choice =
        SamplingParams.builder()
            .temperature(0.0)
            .maxTokens(12)
            .structuredOutputs(
                dev.troupe.protocol.cluster.StructuredOutputsParams.choice(
                    List.of("yes", "no", "maybe later"), "structured_outputs.choice"))
            .build();
    List<List<Integer>> constrained =
        tokens(run(testKit, reference, request("ref-c", ids, choice)));
    KvHandle h = prefill(testKit, p, "pre-c", ids);
    assertEquals(
        constrained,
        tokens(run(testKit, d, request("dec-c", ids, choice).withKvTransfer(h.toRemotePrefill()))));
    for (ActorRef<Command> w : List.of(reference, p, d)) testKit.stop(w);
  }

  @Test
  void anUnpulledLeaseExpiresAndARefusedDecodeGivesItsBlocksBack() {
    ActorRef<Command> p = spawn(testKit, "demo#1", EngineSettings.small());
    ActorRef<Command> d = spawn(testKit, "demo#2", EngineSettings.small());
    List<Integer> ids = prompt(40);
    prefill(testKit, p, "expires", ids);
    assertTrue(blocksUsed(testKit, p) >= 3);
    TestProbe<Object> waiter = testKit.createTestProbe();
    waiter.awaitAssert(
        WAIT,
        () -> {
          assertEquals(0, blocksUsed(testKit, p), "lease expired");
          return null;
        });
    // a decode refusing the request (its block count does not fit the prompt) frees P's blocks
    KvHandle handle = prefill(testKit, p, "refused", ids);
    List<Integer> wrong = new ArrayList<>(handle.remoteBlockIds());
    wrong.add(wrong.get(0));
    KvHandle bad =
        new KvHandle(
            handle.remoteEngineId(),
            wrong,
            handle.remoteHost(),
            handle.remotePort(),
            handle.remoteRequestId(),
            1);
    Failed failed =
        assertInstanceOf(
            Failed.class,
            run(testKit, d, request("dec", ids, GREEDY).withKvTransfer(bad.toRemotePrefill()))
                .get(0));
    assertEquals(ErrorKind.BAD_REQUEST, failed.kind());
    assertEquals("kv_transfer_params", failed.param());
    assertTrue(failed.message().contains("remote_block_ids: 4 blocks given"), failed.message());
    waiter.awaitAssert(
        WAIT,
        () -> {
          assertEquals(0, blocksUsed(testKit, p), "released at once");
          return null;
        });
    assertEquals(0, blocksUsed(testKit, d));
    // an expired (or already pulled) lease: the pull is refused with the reason
    Failed gone =
        assertInstanceOf(
            Failed.class,
            run(testKit, d, request("dec2", ids, GREEDY).withKvTransfer(handle.toRemotePrefill()))
                .get(0));
    assertEquals(ErrorKind.BAD_REQUEST, gone.kind());
    assertTrue(
        gone.message().contains("no KV blocks are leased under remote_request_id refused"),
        gone.message());
    assertEquals(0, blocksUsed(testKit, d), "the refused decode freed what it held");
    testKit.stop(p);
    testKit.stop(d);
  }

  @Test
  void aLayoutMismatchIsRefusedWithWhatDiffers() {
    ActorRef<Command> p = spawn(testKit, "demo#1", EngineSettings.small());
    ActorRef<Command> d8 =
        spawn(
            testKit,
            "demo#3",
            new EngineSettings(8, 64, 0, 8, 256, 16, true, 100, true, List.of()));
    List<Integer> ids = prompt(5); // one block at either block size
    KvHandle handle = prefill(testKit, p, "mismatch", ids);
    Failed failed =
        assertInstanceOf(
            Failed.class,
            run(testKit, d8, request("dec", ids, GREEDY).withKvTransfer(handle.toRemotePrefill()))
                .get(0));
    assertEquals(ErrorKind.BAD_REQUEST, failed.kind());
    assertTrue(failed.message().contains("KV layout mismatch"), failed.message());
    assertTrue(failed.message().contains("block size 8 != 16"), failed.message());
    assertEquals(0, blocksUsed(testKit, p), "a refused pull ends the lease");
    assertEquals(0, blocksUsed(testKit, d8));
    testKit.stop(p);
    testKit.stop(d8);
  }

  @Test
  void aPrefillReplicaGoneBeforeThePullFailsTheDecodeOrItRecomputes() {
    ActorRef<Command> p = spawn(testKit, "demo#1", EngineSettings.small());
    ActorRef<Command> d = spawn(testKit, "demo#2", EngineSettings.small());
    List<Integer> ids = prompt(40);
    KvHandle handle = prefill(testKit, p, "gone", ids);
    testKit.stop(p);
    Failed failed =
        assertInstanceOf(
            Failed.class,
            run(testKit, d, request("dec", ids, GREEDY).withKvTransfer(handle.toRemotePrefill()))
                .get(0));
    assertTrue(failed.message().contains("no prefill replica incarnation"), failed.message());
    assertEquals(0, blocksUsed(testKit, d));
    testKit.stop(d);

    ActorTestKit recomputing = kit("recompute");
    try {
      ActorRef<Command> ref = spawn(recomputing, "demo#0", EngineSettings.small());
      ActorRef<Command> p2 = spawn(recomputing, "demo#1", EngineSettings.small());
      ActorRef<Command> d2 = spawn(recomputing, "demo#2", EngineSettings.small());
      List<List<Integer>> expected = tokens(run(recomputing, ref, request("ref", ids, GREEDY)));
      KvHandle h2 = prefill(recomputing, p2, "gone2", ids);
      recomputing.stop(p2);
      List<GenerationEvent> events =
          run(recomputing, d2, request("dec", ids, GREEDY).withKvTransfer(h2.toRemotePrefill()));
      assertEquals(expected, tokens(events), "recompute: the decode side prefilled it itself");
    } finally {
      recomputing.shutdownTestKit();
    }
  }
}
