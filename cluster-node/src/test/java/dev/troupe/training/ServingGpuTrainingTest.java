package dev.troupe.training;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import dev.troupe.adapters.CheckpointStore;
import dev.troupe.adapters.TrainedAdapters;
import dev.troupe.engine.core.EngineSettings;
import dev.troupe.engine.cuda.EmulatedGpus;
import dev.troupe.engine.model.DemoModel;
import dev.troupe.engine.runner.DeviceSettings;
import dev.troupe.engine.runner.SharedTraining;
import dev.troupe.engine.serving.Engines;
import dev.troupe.engine.structured.StructuredOutputSettings;
import dev.troupe.node.NodeSettings;
import dev.troupe.protocol.cluster.GenerationRequest;
import dev.troupe.protocol.cluster.GenerationRequest.Adapter;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.*;
import dev.troupe.protocol.cluster.SamplingParams;
import dev.troupe.protocol.cluster.ServedModels;
import dev.troupe.protocol.cluster.ServedModels.ServedModel;
import dev.troupe.protocol.cluster.TrainingConfig;
import dev.troupe.training.nd4j.LoraSpec;
import dev.troupe.worker.EngineProvider;
import dev.troupe.worker.GpuReplicas;
import dev.troupe.worker.ModelWorker;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * ART's shared mode on one node, on the CPU emulation of the CUDA kernels: a replica serves the
 * demo model on a (emulated) GPU, and the node's trainer ({@link Trainers}, wired as {@link
 * TrainingEntities} wires it) trains a job on that replica's runner between its engine steps —
 * through the served weights, with no second upload of them — and the new step is served from
 * memory (its checkpoint directory is gone before the first request names it). A request in flight
 * across a training step and the registration of the next adapter keeps its step and its tokens.
 */
class ServingGpuTrainingTest {
  private static final ActorTestKit testKit =
      ActorTestKit.create(
          ConfigFactory.parseString("pekko.actor.serialize-messages = on")
              .withFallback(ConfigFactory.load()));
  private static final ServedModels MODELS =
      new ServedModels(List.of(new ServedModel("demo", "demo", 1, "fcfs")));
  private static final Duration WAIT = Duration.ofMinutes(5);
  private static final String MODEL_ID = "7d8f7a52-2d6e-4a43-9a55-0000000000a1";
  private static final String OTHER_ID = "7d8f7a52-2d6e-4a43-9a55-0000000000a2";
  private static final int ROW = 64;
  private static final LoraSpec LORA = new LoraSpec(8, 16, LoraSpec.ALL_TARGETS, false, 3407);

  @TempDir Path dir;

  @AfterAll
  static void stop() {
    testKit.shutdownTestKit();
  }

  /** The replica's engine as a node opens it: the demo model on an emulated GPU that trains. */
  private static ActorRef<Command> spawnReplica() {
    DeviceSettings device =
        new DeviceSettings(
            "cuda",
            0.9,
            "auto",
            true,
            new SharedTraining(LORA.rank(), LORA.targets(), ROW),
            EmulatedGpus.class.getName());
    EngineProvider engines =
        (model, replica) ->
            Engines.open(
                model, EngineSettings.small(), device, StructuredOutputSettings.defaults());
    return testKit.spawn(
        ModelWorker.create("demo#0", MODELS, engines, Duration.ZERO, 4),
        DispatcherSelector.fromConfig(NodeSettings.WORKER_DISPATCHER));
  }

  private Trainers trainers() {
    TrainingBackend.Factory own = TrainingBackends.cpu();
    GpuReplicas gpus = GpuReplicas.get(testKit.system());
    return new Trainers(
        new ServedBaseModels(MODELS, "auto"),
        new Trainer.Settings(ROW, LORA, AdamW.Hyper.ART),
        TrainingEntities.backends(gpus, true, own),
        new CheckpointStore(dir));
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

  private record Run(long version, List<Integer> tokens, List<Double> logprobs, FinishReason end) {}

  private static Run collect(TestProbe<GenerationEvent> probe, Run before) {
    long version = before == null ? -1 : before.version();
    List<Integer> tokens = new ArrayList<>(before == null ? List.of() : before.tokens());
    List<Double> logprobs = new ArrayList<>(before == null ? List.of() : before.logprobs());
    while (true) {
      GenerationEvent e = probe.receiveMessage(WAIT);
      if (e instanceof Failed f) throw new AssertionError("failed: " + f);
      GenerationUpdate u = (GenerationUpdate) e;
      if (u.started() != null) version = u.started().weightVersion();
      FinishReason end = null;
      for (ChoiceUpdate c : u.choices()) {
        tokens.addAll(c.tokenIds());
        if (c.logprobs() != null)
          for (LogprobEntry l : c.logprobs()) logprobs.add(l.chosen().logprob());
        if (c.finished()) end = c.finishReason();
      }
      if (u.done()) return new Run(version, tokens, logprobs, end);
    }
  }

  /** The first update of a request (it has started, and holds its KV blocks). */
  private static Run first(TestProbe<GenerationEvent> probe) {
    GenerationUpdate u = assertInstanceOf(GenerationUpdate.class, probe.receiveMessage(WAIT));
    List<Integer> tokens = new ArrayList<>();
    List<Double> logprobs = new ArrayList<>();
    for (ChoiceUpdate c : u.choices()) {
      tokens.addAll(c.tokenIds());
      for (LogprobEntry l : c.logprobs()) logprobs.add(l.chosen().logprob());
    }
    return new Run(u.started().weightVersion(), tokens, logprobs, null);
  }

  private static Run generate(ActorRef<Command> worker, String id, int max, Adapter adapter) {
    TestProbe<GenerationEvent> probe = testKit.createTestProbe();
    worker.tell(new Generate(request(id, max, adapter), probe.ref()));
    return collect(probe, null);
  }

  /** A group of two sampled answers of the demo model's tokens, rewards 1 and 0. */
  private static List<byte[]> groups(int seed) {
    StringBuilder g = new StringBuilder("{'trajectories':[");
    for (int r = 0; r < 2; r++) {
      StringBuilder tokens = new StringBuilder();
      for (int i = 0; i < 6; i++)
        tokens
            .append("{'token':'token_id:")
            .append(1000 + 37 * (seed + 3 * r + i) % 5000)
            .append("','logprob':-2.5},");
      tokens.append("{'token':'token_id:151645','logprob':-1.0}"); // <|im_end|>
      if (r > 0) g.append(',');
      g.append("{'reward':")
          .append(1 - r)
          .append(",'messages_and_choices':[{'role':'user','content':'Once upon a time'},")
          .append("{'finish_reason':'stop','index':0,'message':{'role':'assistant','content':'x'},")
          .append("'logprobs':{'content':[")
          .append(tokens)
          .append("]}}]}");
    }
    g.append("]}");
    return List.of(
        g.toString().replace('\'', '"').getBytes(java.nio.charset.StandardCharsets.UTF_8));
  }

  private static Trainer.Result train(Trainers trainers, long latest, String artifact, int seed)
      throws Exception {
    return train(trainers, MODEL_ID, latest, artifact, seed);
  }

  private static Trainer.Result train(
      Trainers trainers, String modelId, long latest, String artifact, int seed) throws Exception {
    TrainingConfig config =
        TrainingConfig.resolve(null, null, null, null, null, 0.05, null, null, null, null, null);
    Trainers.Job job = new Trainers.Job(modelId, "demo", latest, artifact, groups(seed), config);
    return trainers
        .train(
            job,
            new Trainer.Listener() {
              @Override
              public void started(int numSequences) {}

              @Override
              public void gradientStep(int index, Map<String, Double> metrics) {}
            },
            () -> false)
        .get(10, TimeUnit.MINUTES);
  }

  private static void delete(Path p) throws Exception {
    try (Stream<Path> s = Files.walk(p)) {
      for (Path f : s.sorted(Comparator.reverseOrder()).toList()) Files.delete(f);
    }
  }

  /**
   * A node that serves and trains (roles worker and trainer, {@code share-serving-gpu} on: the
   * default) sizes its GPU replicas' KV cache after the trainer's share; other nodes, {@code off}
   * and full fine-tuning do not.
   */
  @Test
  void aNodeThatTrainsKeepsTheTrainersShareOutOfEachGpuReplicasKvCache() {
    EmulatedGpus.assumeAvailable();
    com.typesafe.config.Config both =
        ConfigFactory.parseString(
                "pekko.cluster.roles = [worker, trainer, gateway]\n"
                    + "troupe.training.max-sequence-length = 512\n"
                    + "troupe.training.lora.rank = 4")
            .withFallback(ConfigFactory.load());
    SharedTraining t = NodeSettings.fromConfig(both).device().training();
    assertEquals(new SharedTraining(4, LoraSpec.ALL_TARGETS, 512), t);
    for (String other :
        List.of(
            "pekko.cluster.roles = [worker]",
            "pekko.cluster.roles = [trainer]",
            "troupe.training.share-serving-gpu = off",
            "troupe.training.full-fine-tune = on"))
      assertEquals(
          null,
          NodeSettings.fromConfig(ConfigFactory.parseString(other).withFallback(both))
              .device()
              .training(),
          other);

    // The demo model on an emulated GPU at 0.9, with and without the trainer's share: the cache
    // shrinks by that share (the emulator always reports half its memory free).
    var cfg = DemoModel.config();
    DeviceSettings gpu =
        new DeviceSettings("cuda", 0.9, "auto", true, null, EmulatedGpus.class.getName());
    long perBlock = 2L * cfg.numLayers() * 16 * cfg.numKvHeads() * cfg.headDim() * 2;
    long rope = 2L * cfg.maxPositionEmbeddings() * (cfg.headDim() / 2) * 4;
    long total = 1L << 30, reserved = t.bytes(cfg);
    int[] blocks = new int[2];
    for (int i = 0; i < 2; i++)
      try (var r =
          (dev.troupe.engine.cuda.CudaModelRunner)
              dev.troupe.engine.runner.ModelRunners.open(
                  null, i == 0 ? gpu : gpu.withTraining(t), 0, 16, 64)) {
        assertEquals(i == 0 ? 0 : reserved, r.reservedBytes());
        blocks[i] = r.numBlocks();
      }
    // one block fewer than fits: the runner's scratch block
    assertEquals((long) ((0.9 * total - total / 2 - rope) / perBlock) - 1, blocks[0]);
    assertEquals((long) ((0.9 * total - total / 2 - rope - reserved) / perBlock) - 1, blocks[1]);
    assertTrue(reserved > 100 * perBlock, "the trainer's share is a real share: " + reserved);
  }

  @Test
  void aJobTrainsOnTheServingRunnerAndItsStepsAreServedFromMemory() throws Exception {
    EmulatedGpus.assumeAvailable();
    int gpusBefore = EmulatedGpus.opened().size();
    ActorRef<Command> worker = spawnReplica();
    Run base = generate(worker, "base", 24, null); // also waits for the replica to load
    assertEquals(gpusBefore + 1, EmulatedGpus.opened().size(), "the replica's GPU");
    EmulatedGpus.Counted gpu = EmulatedGpus.opened().get(gpusBefore);
    long loaded = gpu.uploadedBytes(), allocated = gpu.allocatedBytes();
    long weights = DemoModel.config().vocabSize() * (long) DemoModel.config().hiddenSize() * 2;
    assertTrue(loaded > weights, "the replica uploaded its weights: " + loaded);

    Trainers trainers = trainers();
    ReplicaAnnouncer announcer =
        new ReplicaAnnouncer(MODELS, id -> worker, TrainedAdapters.get(testKit.system()));
    try {
      // Job 1 trains on the replica's runner: its buffers on the replica's GPU, no other GPU
      // opened, and far less uploaded than the weights (token ids, loss inputs, RoPE tables).
      Trainer.Result one = train(trainers, 0, null, 1);
      assertEquals(gpusBefore + 1, EmulatedGpus.opened().size(), "no GPU of the trainer's own");
      assertTrue(gpu.allocatedBytes() > allocated, "the trainer's buffers are the replica's GPU's");
      assertTrue(
          gpu.uploadedBytes() - loaded < weights / 4,
          "no second copy of the weights: " + (gpu.uploadedBytes() - loaded) + " bytes uploaded");
      // Its checkpoint is written (other nodes, restarts) but this node serves step 1 from memory.
      assertTrue(Files.isRegularFile(one.checkpoint().resolve("adapter_model.safetensors")));
      delete(one.checkpoint());
      announcer.published(MODEL_ID, "demo", 1, one.checkpoint(), one.adapter());
      Adapter step1 = new Adapter(MODEL_ID, 1, one.checkpoint().toString());
      Run ref1 = generate(worker, "ref1", 24, step1);
      assertEquals(1, ref1.version());
      assertTrue(
          Math.abs(ref1.logprobs().get(0) - base.logprobs().get(0)) > 1e-4
              || !ref1.tokens().equals(base.tokens()),
          "step 1 is served, not the base model");

      // Request a runs on step 1 while job 2 trains on the same runner and step 2 is registered:
      // it keeps its KV blocks and its step, and decodes exactly as it did alone.
      TestProbe<GenerationEvent> a = testKit.createTestProbe();
      worker.tell(new Generate(request("a", 400, step1), a.ref()));
      Run aFirst = first(a);
      assertEquals(1, aFirst.version());
      Trainer.Result two = train(trainers, 1, null, 2);
      announcer.published(MODEL_ID, "demo", 2, two.checkpoint(), two.adapter());
      Adapter step2 = new Adapter(MODEL_ID, 2, two.checkpoint().toString());
      Run b = generate(worker, "b", 4, step2);
      worker.tell(new Cancel("a"));
      Run aAll = collect(a, aFirst);
      assertEquals(2, b.version());
      assertEquals(FinishReason.ABORT, aAll.end(), "a was in flight throughout");
      assertEquals(1, aAll.version());
      int n = aAll.tokens().size();
      assertTrue(n > aFirst.tokens().size(), "a decoded between the calls: " + n + " tokens");
      Run alone = generate(worker, "alone", n, step1);
      assertEquals(alone.tokens(), aAll.tokens(), "a's tokens equal a run without training");
      for (int i = 0; i < n; i++)
        assertEquals(alone.logprobs().get(i), aAll.logprobs().get(i), 2e-3, "logprob " + i);

      // Another trainable model of the same base: its trainer takes the place of the first one
      // (the replica kept memory for one), which is freed, not kept warm beside it.
      long live = gpu.liveBytes();
      train(trainers, OTHER_ID, 0, null, 3);
      assertTrue(
          gpu.liveBytes() - live
              < new SharedTraining(LORA.rank(), LORA.targets(), ROW).bytes(DemoModel.config()) / 2,
          "one trainer on the runner at a time: " + (gpu.liveBytes() - live) + " bytes more");
    } finally {
      trainers.close();
      testKit.stop(worker);
    }
  }
}
