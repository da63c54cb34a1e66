package dev.troupe.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import dev.troupe.adapters.CheckpointStore;
import dev.troupe.adapters.TrainedAdapters;
import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.core.EngineSettings;
import dev.troupe.engine.model.DemoModel;
import dev.troupe.engine.serving.TestEngines;
import dev.troupe.node.NodeSettings;
import dev.troupe.protocol.cluster.GenerationRequest;
import dev.troupe.protocol.cluster.GenerationRequest.Adapter;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.*;
import dev.troupe.protocol.cluster.SamplingParams;
import dev.troupe.protocol.cluster.ServedModels;
import dev.troupe.protocol.cluster.ServedModels.ServedModel;
import dev.troupe.protocol.cluster.TrainingJobProtocol.AdapterCheckpoint;
import dev.troupe.scheduler.SchedulingPolicy;
import dev.troupe.training.nd4j.LoraSpec;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Trained checkpoints served by a ModelWorker: adapters read lazily from PEFT directories, a
 * request keeps the adapter it started with while a newer step is registered mid-generation,
 * eviction never touches an adapter in use, an adapter this node trained is taken from memory, and
 * a missing checkpoint is a NOT_FOUND naming {@code model}.
 */
class ModelWorkerAdapterTest {
  private static final ActorTestKit testKit =
      ActorTestKit.create(
          ConfigFactory.parseString("pekko.actor.serialize-messages = on")
              .withFallback(ConfigFactory.load()));
  private static final ServedModels MODELS =
      new ServedModels(List.of(new ServedModel("demo", "demo", 1, "fcfs")));
  private static final Duration WAIT = Duration.ofSeconds(60);
  static final String MODEL_ID = "7d8f7a52-2d6e-4a43-9a55-000000000001";
  private static Path root;
  private static Adapter step1;
  private static Adapter step2;

  @BeforeAll
  static void writeCheckpoints() throws Exception {
    root = Files.createTempDirectory("adapters");
    CheckpointStore store = new CheckpointStore(root);
    step1 = new Adapter(MODEL_ID, 1, writeRandom(store, 1, 11).toString());
    step2 = new Adapter(MODEL_ID, 2, writeRandom(store, 2, 22).toString());
  }

  @AfterAll
  static void stop() {
    testKit.shutdownTestKit();
  }

  /**
   * A PEFT checkpoint with random A and B on q_proj and o_proj of every layer of the demo model.
   */
  static Path writeRandom(CheckpointStore store, long step, long seed) {
    ModelConfig c = DemoModel.config();
    int rank = 4;
    int attn = c.numHeads() * c.headDim();
    Random r = new Random(seed);
    Map<String, double[]> params = new LinkedHashMap<>();
    Map<String, long[]> shapes = new LinkedHashMap<>();
    for (int l = 0; l < c.numLayers(); l++) {
      for (String m : List.of("self_attn.q_proj", "self_attn.o_proj")) {
        int in = m.endsWith("q_proj") ? c.hiddenSize() : attn;
        int out = m.endsWith("q_proj") ? attn : c.hiddenSize();
        String key = "model.layers." + l + "." + m;
        params.put(key + ".lora_A", gaussian(r, rank * in, 0.3));
        shapes.put(key + ".lora_A", new long[] {rank, in});
        params.put(key + ".lora_B", gaussian(r, out * rank, 0.3));
        shapes.put(key + ".lora_B", new long[] {out, rank});
      }
    }
    LoraSpec spec = new LoraSpec(rank, 8, List.of("q_proj", "o_proj"), false, seed);
    return store.save(
        MODEL_ID,
        step,
        new CheckpointStore.AdapterConfig("demo", spec.rank(), spec.alpha(), spec.targets()),
        params,
        shapes,
        null);
  }

  private static double[] gaussian(Random r, int n, double scale) {
    double[] v = new double[n];
    for (int i = 0; i < n; i++) v[i] = scale * r.nextGaussian();
    return v;
  }

  private static ActorRef<Command> spawn(int maxAdapters) {
    EngineSettings settings = EngineSettings.small().withNumBlocks(56); // a runner of its own
    EngineProvider engines = (model, replica) -> TestEngines.demo(settings, SchedulingPolicy.FCFS);
    return testKit.spawn(
        ModelWorker.create("demo#0", MODELS, engines, Duration.ZERO, maxAdapters),
        DispatcherSelector.fromConfig(NodeSettings.WORKER_DISPATCHER));
  }

  private static GenerationRequest request(String id, int maxTokens, Adapter adapter) {
    SamplingParams p =
        SamplingParams.builder()
            .temperature(0.0)
            .maxTokens(maxTokens)
            .ignoreEos(true)
            .logprobs(1)
            .build();
    return GenerationRequest.prompt(id, "Once upon a time", p).withAdapter(adapter);
  }

  /** One finished (or aborted) request: its version, tokens, chosen logprobs and finish reason. */
  private record Run(
      long version, List<Integer> tokens, List<Double> logprobs, FinishReason finish) {}

  private static Run collect(TestProbe<GenerationEvent> probe) {
    long version = -1;
    List<Integer> tokens = new ArrayList<>();
    List<Double> logprobs = new ArrayList<>();
    FinishReason finish = null;
    while (true) {
      GenerationEvent e = probe.receiveMessage(WAIT);
      if (e instanceof Failed f) throw new AssertionError("failed: " + f);
      GenerationUpdate u = (GenerationUpdate) e;
      if (u.started() != null) version = u.started().weightVersion();
      for (ChoiceUpdate c : u.choices()) {
        tokens.addAll(c.tokenIds());
        if (c.logprobs() != null)
          for (LogprobEntry l : c.logprobs()) logprobs.add(l.chosen().logprob());
        if (c.finished()) finish = c.finishReason();
      }
      if (u.done()) return new Run(version, tokens, logprobs, finish);
    }
  }

  private static Run generate(ActorRef<Command> worker, String id, int maxTokens, Adapter adapter) {
    TestProbe<GenerationEvent> probe = testKit.createTestProbe();
    worker.tell(new Generate(request(id, maxTokens, adapter), probe.ref()));
    return collect(probe);
  }

  @Test
  void aRunningRequestKeepsItsStepWhileTheNextIsRegistered() {
    // References, each alone on a fresh worker that loads the checkpoint lazily.
    ActorRef<Command> alone = spawn(8);
    Run ref1 = generate(alone, "ref1", 200, step1);
    Run ref2 = generate(alone, "ref2", 5, step2);
    Run base = generate(alone, "base", 5, null);
    testKit.stop(alone);
    assertEquals(1, ref1.version());
    assertEquals(2, ref2.version());
    assertEquals(0, base.version());
    // The adapters really change the model.
    assertTrue(
        Math.abs(ref1.logprobs().get(0) - base.logprobs().get(0)) > 1e-3
            || !ref1.tokens().get(0).equals(base.tokens().get(0)),
        "step 1 differs from the base");
    assertNotEquals(ref1.logprobs().subList(0, 5), ref2.logprobs(), "step 2 differs from step 1");

    // One slot only: step 2 cannot evict step 1 while request a runs on it.
    ActorRef<Command> worker = spawn(1);
    TestProbe<GenerationEvent> a = testKit.createTestProbe();
    worker.tell(new Generate(request("a", 200, step1), a.ref()));
    GenerationUpdate first = assertInstanceOf(GenerationUpdate.class, a.receiveMessage(WAIT));
    assertEquals(1, first.started().weightVersion(), "the first update: prefilled on step 1");
    worker.tell(new AdapterCheckpoint(MODEL_ID, 2, step2.directory()));
    Run b = generate(worker, "b", 5, step2); // joins the batch once step 2 is registered
    worker.tell(new Cancel("a")); // a was still running on step 1 throughout
    Run aRest = collect(a);
    testKit.stop(worker);

    assertEquals(2, b.version());
    assertEquals(ref2.tokens(), b.tokens());
    assertClose(ref2.logprobs(), b.logprobs());
    assertEquals(FinishReason.ABORT, aRest.finish(), "a was still running when b finished");
    List<Integer> aTokens = new ArrayList<>(first.choices().get(0).tokenIds());
    aTokens.addAll(aRest.tokens());
    assertTrue(aTokens.size() > 6, "a decoded alongside b: " + aTokens.size());
    assertEquals(ref1.tokens().subList(0, aTokens.size()), aTokens);
    List<Double> aLogprobs = new ArrayList<>();
    aLogprobs.add(first.choices().get(0).logprobs().get(0).chosen().logprob());
    aLogprobs.addAll(aRest.logprobs());
    assertClose(ref1.logprobs().subList(0, aLogprobs.size()), aLogprobs);
  }

  @Test
  void aMissingCheckpointIsNotFound() {
    ActorRef<Command> worker = spawn(2);
    TestProbe<GenerationEvent> probe = testKit.createTestProbe();
    Adapter missing = new Adapter(MODEL_ID, 9, root.resolve(MODEL_ID).resolve("0009").toString());
    worker.tell(new Generate(request("x", 3, missing), probe.ref()));
    Failed f = assertInstanceOf(Failed.class, probe.receiveMessage(WAIT));
    assertEquals(ErrorKind.NOT_FOUND, f.kind());
    assertEquals("model", f.param());
    assertTrue(f.message().contains(MODEL_ID + ":step9"), f.message());
    // The worker still serves the base model and other steps.
    assertEquals(1, generate(worker, "y", 3, step1).version());
    testKit.stop(worker);
  }

  @Test
  void anAdapterTrainedOnThisNodeIsTakenFromMemory() {
    // This node's trainer offers its new adapter; the announced directory is never read (it does
    // not exist here), yet the replica serves the step exactly as the same adapter from disk.
    String trainedHere = "7d8f7a52-2d6e-4a43-9a55-000000000002";
    String nowhere = root.resolve("not-written").toString();
    TrainedAdapters.get(testKit.system())
        .offer(trainedHere, 1, CheckpointStore.loadAdapter(Path.of(step1.directory()), 1));
    ActorRef<Command> worker = spawn(4);
    worker.tell(new AdapterCheckpoint(trainedHere, 1, nowhere));
    Run fromMemory = generate(worker, "m", 5, new Adapter(trainedHere, 1, nowhere));
    Run fromDisk = generate(worker, "d", 5, step1);
    testKit.stop(worker);
    assertEquals(1, fromMemory.version());
    assertEquals(fromDisk.tokens(), fromMemory.tokens());
    assertClose(fromDisk.logprobs(), fromMemory.logprobs());
  }

  private static void assertClose(List<Double> expected, List<Double> actual) {
    assertEquals(expected.size(), actual.size());
    for (int i = 0; i < expected.size(); i++)
      assertEquals(expected.get(i), actual.get(i), 2e-3, "logprob " + i);
  }
}
