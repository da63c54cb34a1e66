package dev.troupe.training;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import dev.troupe.adapters.CheckpointStore;
import dev.troupe.adapters.TrainedAdapters;
import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.testing.MapWeights;
import dev.troupe.engine.testing.TinyModels;
import dev.troupe.persistence.PersistenceSettings;
import dev.troupe.protocol.cluster.ModelWorkerProtocol;
import dev.troupe.protocol.cluster.ServedModels;
import dev.troupe.protocol.cluster.TrainableModelProtocol;
import dev.troupe.protocol.cluster.TrainingConfig;
import dev.troupe.protocol.cluster.TrainingJobProtocol;
import dev.troupe.registry.TrainableModel;
import dev.troupe.training.nd4j.LoraSpec;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Predicate;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.persistence.testkit.JournalOperation;
import org.apache.pekko.persistence.testkit.ProcessingPolicy;
import org.apache.pekko.persistence.testkit.ProcessingResult;
import org.apache.pekko.persistence.testkit.ProcessingSuccess;
import org.apache.pekko.persistence.testkit.StorageFailure;
import org.apache.pekko.persistence.testkit.WriteEvents;
import org.apache.pekko.persistence.testkit.javadsl.EventSourcedBehaviorTestKit;
import org.apache.pekko.persistence.testkit.javadsl.PersistenceTestKit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A training job end to end through the real entities (job, the model's queue, the model's {@code
 * TrainableModel}), the real run on the node's trainer (a tiny Qwen3) and the real announcement to
 * two replicas (probes): every message each of them receives is counted. A job crosses between
 * entities a fixed number of times — however many optimizer steps it takes — and once per replica;
 * the steps reach the job as messages from its run, on its node.
 */
class TrainingFlowTest {
  static final ActorTestKit kit =
      ActorTestKit.create(
          EventSourcedBehaviorTestKit.config()
              .withFallback(ConfigFactory.parseString("pekko.actor.serialize-messages = on"))
              .withFallback(ConfigFactory.load()));
  static final ModelConfig CONFIG = TinyModels.config(TinyModels.Arch.QWEN3);
  static final String BASE = "tiny";
  static final ServedModels SERVED =
      new ServedModels(List.of(new ServedModels.ServedModel(BASE, "demo", 2, "fcfs")));

  @TempDir static Path dir;
  static Trainers trainers;
  static PersistenceTestKit journal;

  /** Messages received, by "receiver <- message class". */
  final Map<String, AtomicInteger> received = new ConcurrentHashMap<>();

  final TrainedAdapters local = new TrainedAdapters(4);

  @BeforeAll
  static void start() {
    MapWeights weights = new MapWeights(CONFIG, TinyModels.randomWeights(CONFIG, 3));
    trainers =
        new Trainers(
            name ->
                new Trainers.BaseModels.Loaded(
                    CONFIG, weights, new CharTokenizer(CONFIG.vocabSize()), new ChatMlTemplate()),
            new Trainer.Settings(
                64, new LoraSpec(4, 8, LoraSpec.ALL_TARGETS, false, 1), AdamW.Hyper.ART),
            TrainingBackends.cpu(),
            new CheckpointStore(dir.resolve("checkpoints")));
    journal = PersistenceTestKit.create(kit.system());
  }

  @AfterAll
  static void stop() {
    trainers.close();
    kit.shutdownTestKit();
  }

  @AfterEach
  void resetJournal() {
    journal.resetPolicy();
  }

  /** A model with its queue, one job entity, replicas and counters around each of them. */
  final class Harness {
    final String modelId = UUID.randomUUID().toString();
    final String jobId = UUID.randomUUID().toString();
    final ActorRef<TrainableModelProtocol.Command> model;
    final ActorRef<TrainingQueue.Command> queue;
    final ActorRef<TrainingJobProtocol.Command> job;

    Harness() {
      this(m -> false);
    }

    /** With a model that never receives what {@code lost} matches (nor counts it). */
    Harness(Predicate<TrainableModelProtocol.Command> lost) {
      model =
          kit.spawn(
              losing(
                  lost,
                  counted(
                      "model",
                      TrainableModelProtocol.Command.class,
                      TrainableModel.create(
                          modelId, PersistenceSettings.h2(dir.resolve("unused"))))));
      List<ActorRef<TrainingJobProtocol.Command>> jobRef = new ArrayList<>();
      queue =
          kit.spawn(
              counted(
                  "queue",
                  TrainingQueue.Command.class,
                  TrainingQueue.create(modelId, null, id -> jobRef.get(0))));
      ReplicaAnnouncer announcer =
          new ReplicaAnnouncer(
              SERVED,
              id -> kit.spawn(counted(id, ModelWorkerProtocol.Command.class, Behaviors.ignore())),
              local);
      TrainingJob.Links links =
          new TrainingJob.Links(
              id -> queue,
              new TrainingRun.Services(id -> model, trainers, announcer, Duration.ofSeconds(20)),
              Duration.ofMinutes(1));
      job =
          kit.spawn(
              counted(
                  "job",
                  TrainingJobProtocol.Command.class,
                  TrainingJob.create(jobId, null, links)));
      jobRef.add(job);
      TestProbe<TrainableModelProtocol.ModelReply> created = kit.createTestProbe();
      model.tell(
          new TrainableModelProtocol.Create(
              new TrainableModelProtocol.ModelInfo(modelId, "e", "p", modelId, BASE, null, 0),
              created.ref()));
      created.expectMessageClass(TrainableModelProtocol.ModelFound.class);
    }

    void submit(List<String> groups) {
      TestProbe<TrainingJobProtocol.SubmitReply> r = kit.createTestProbe();
      job.tell(
          new TrainingJobProtocol.Submit(
              modelId,
              groups.stream().map(g -> g.getBytes(StandardCharsets.UTF_8)).toList(),
              TrainingConfig.resolve(
                  null, null, null, null, null, 0.01, null, null, null, null, null),
              r.ref()));
      r.expectMessage(new TrainingJobProtocol.Submitted(jobId));
    }

    /** The job's events once it has finished, and the model's queue has been told. */
    List<TrainingJobProtocol.JobEvent> awaitEnd() {
      TestProbe<TrainingJobProtocol.JobReply> r = kit.createTestProbe();
      List<TrainingJobProtocol.JobEvent> events = new ArrayList<>();
      r.awaitAssert(
          Duration.ofSeconds(60),
          Duration.ofMillis(50),
          () -> {
            job.tell(new TrainingJobProtocol.ListEvents(null, 100, r.ref()));
            var page = (TrainingJobProtocol.EventPage) r.receiveMessage();
            String last =
                page.data().isEmpty() ? "" : page.data().get(page.data().size() - 1).type();
            assertTrue(last.equals("training_ended") || last.equals("training_failed"), last);
            events.clear();
            events.addAll(page.data());
            assertEquals(1, count("queue <- Done"));
            return null;
          });
      return events;
    }

    long latestStep() {
      TestProbe<TrainableModelProtocol.ModelReply> r = kit.createTestProbe();
      model.tell(new TrainableModelProtocol.Get(r.ref()));
      return ((TrainableModelProtocol.ModelFound) r.receiveMessage()).latest().step();
    }
  }

  <T> Behavior<T> counted(String name, Class<T> type, Behavior<T> behavior) {
    ActorRef<Object> counter =
        kit.spawn(
            Behaviors.receive(Object.class)
                .onAnyMessage(
                    m -> {
                      received
                          .computeIfAbsent(
                              name + " <- " + m.getClass().getSimpleName(),
                              k -> new AtomicInteger())
                          .incrementAndGet();
                      return Behaviors.same();
                    })
                .build());
    return Behaviors.monitor(type, counter.narrow(), behavior);
  }

  /** {@code behavior} behind a link that loses what {@code lost} matches. */
  static <T> Behavior<T> losing(Predicate<T> lost, Behavior<T> behavior) {
    return Behaviors.setup(
        ctx -> {
          ActorRef<T> target = ctx.spawnAnonymous(behavior);
          return Behaviors.<T>receiveMessage(
              m -> {
                if (!lost.test(m)) target.tell(m);
                return Behaviors.same();
              });
        });
  }

  int count(String key) {
    AtomicInteger n = received.get(key);
    return n == null ? 0 : n.get();
  }

  /**
   * What crossed between entities: every message but the test's reads, the job's run's reports and
   * what an entity sends itself.
   */
  Map<String, Integer> crossings() {
    Map<String, Integer> m = new TreeMap<>();
    received.forEach(
        (k, v) -> {
          if (!k.matches("job <- (Run\\w+|StepDone|ListEvents|GetJob|Idle)|queue <- GrantNext"))
            m.put(k, v.get());
        });
    return m;
  }

  /**
   * A group of two trajectories (rewards 1 and 0, so both train) whose answers are {@code length}
   * characters: with 64-token rows, two short ones share a row and long ones take one each.
   */
  static String group(int length) {
    StringBuilder tokens = new StringBuilder();
    for (int i = 0; i < length; i++) tokens.append("{'token':'c:x','logprob':-4.5},");
    String t =
        "{'reward':%s,'messages_and_choices':[{'role':'user','content':'Q'},"
            + "{'finish_reason':'stop','index':0,'message':{'role':'assistant','content':'%s'},"
            + "'logprobs':{'content':["
            + tokens
            + "{'token':'<|im_end|>','logprob':-4.5}]}}]}";
    String answer = "x".repeat(length);
    return ("{'trajectories':[" + t.formatted(1, answer) + "," + t.formatted(0, answer) + "]}")
        .replace('\'', '"');
  }

  static List<String> types(List<TrainingJobProtocol.JobEvent> events) {
    return events.stream().map(TrainingJobProtocol.JobEvent::type).toList();
  }

  @Test
  void aJobCrossesTheClusterAFixedNumberOfTimesWhateverItsSteps() {
    Map<Integer, Map<String, Integer>> byRows = new TreeMap<>();
    for (List<String> groups : List.of(List.of(group(1)), List.of(group(30), group(30)))) {
      received.clear();
      Harness h = new Harness();
      h.submit(groups);
      List<TrainingJobProtocol.JobEvent> events = h.awaitEnd();
      int rows = events.get(0).data().get("num_sequences").intValue();
      List<String> expected = new ArrayList<>(List.of("training_started"));
      for (int i = 0; i < rows; i++) expected.add("gradient_step");
      expected.add("training_ended");
      assertEquals(expected, types(events));
      assertEquals(rows, count("job <- StepDone"), "each step is a message from the run");
      assertEquals(1, h.latestStep());
      assertNotNull(local.find(h.modelId, 1), "the adapter is offered to this node's replicas");
      byRows.put(rows, crossings());
    }
    assertEquals(List.of(1, 4), List.copyOf(byRows.keySet()));
    Map<String, Integer> once =
        new TreeMap<>(
            Map.of(
                "job <- Submit", 1,
                "job <- Turn", 1,
                "queue <- Enqueue", 1,
                "queue <- Done", 1,
                "model <- Create", 1, // the test's
                "model <- Get", 2, // the test's and the run's
                "model <- AddCheckpoint", 1,
                "tiny#0 <- AdapterCheckpoint", 1,
                "tiny#1 <- AdapterCheckpoint", 1));
    assertEquals(once, byRows.get(1));
    assertEquals(once, byRows.get(4));
  }

  @Test
  void aJobThatRestartsMidRunResumesItsStreamAndTrainsItsStepOnce() {
    // The restart stops the first run, but its training thread may finish the last steps and
    // list the checkpoint first (it did on a loaded machine: the next test's case); here the
    // listing of a run stopped by the restart is lost, so the second run trains the step
    Harness h =
        new Harness(
            m -> m instanceof TrainableModelProtocol.AddCheckpoint && count("job <- Turn") < 2);
    String pid = TrainingJob.persistenceId(h.jobId).id();
    // the journal fails the job's second step once: the job restarts (back-off), asks for its
    // turn again and runs again from the model's latest checkpoint
    journal.withPolicy(
        new ProcessingPolicy<JournalOperation>() {
          int steps;

          @Override
          public ProcessingResult tryProcess(String persistenceId, JournalOperation op) {
            if (persistenceId.equals(pid)
                && op instanceof WriteEvents w
                && w.getBatch().stream().anyMatch(e -> e instanceof TrainingJob.StepCompleted)
                && ++steps == 2) return StorageFailure.create(new RuntimeException("disk full"));
            return ProcessingSuccess.getInstance();
          }
        });
    h.submit(List.of(group(30), group(30)));
    List<TrainingJobProtocol.JobEvent> events = h.awaitEnd();
    assertEquals(
        List.of(
            "training_started",
            "gradient_step",
            "gradient_step",
            "gradient_step",
            "gradient_step",
            "training_ended"),
        types(events));
    assertEquals(2, count("job <- Turn"), "asked again after the restart");
    assertEquals(1, h.latestStep(), "the step was trained and listed once");
    assertEquals(1, count("model <- AddCheckpoint"));
  }

  @Test
  void aJobWhoseStepWasListedBeforeItsRestartSucceedsWithoutTrainingAgain() {
    Harness h = new Harness();
    String pid = TrainingJob.persistenceId(h.jobId).id();
    // the run lists step 1 and reports success; the journal fails the job's success once: the job
    // restarts, gets its turn again, and its new run finds the step listed
    journal.withPolicy(
        new ProcessingPolicy<JournalOperation>() {
          boolean failed;

          @Override
          public ProcessingResult tryProcess(String persistenceId, JournalOperation op) {
            if (persistenceId.equals(pid)
                && op instanceof WriteEvents w
                && w.getBatch().stream().anyMatch(e -> e instanceof TrainingJob.JobSucceeded)
                && !failed) {
              failed = true;
              return StorageFailure.create(new RuntimeException("disk full"));
            }
            return ProcessingSuccess.getInstance();
          }
        });
    h.submit(List.of(group(30), group(30)));
    List<TrainingJobProtocol.JobEvent> events = h.awaitEnd();
    assertEquals(
        List.of(
            "training_started",
            "gradient_step",
            "gradient_step",
            "gradient_step",
            "gradient_step",
            "training_ended"),
        types(events));
    assertEquals(2, count("job <- Turn"), "asked again after the restart");
    assertEquals(1, h.latestStep());
    assertEquals(1, count("model <- AddCheckpoint"), "listed by the first run only");
    assertEquals(2, count("tiny#0 <- AdapterCheckpoint"), "announced by both runs");
  }

  @Test
  void aJobOnAMissingModelFailsVisibly() {
    Harness h = new Harness();
    TestProbe<TrainableModelProtocol.DeleteReply> deleted = kit.createTestProbe();
    h.model.tell(new TrainableModelProtocol.Delete(deleted.ref()));
    deleted.expectMessageClass(TrainableModelProtocol.ModelDeleted.class);
    h.submit(List.of(group(1)));
    List<TrainingJobProtocol.JobEvent> events = h.awaitEnd();
    assertEquals(List.of("training_failed"), types(events));
    assertEquals("model " + h.modelId + " not found", events.get(0).errorMessage());
    assertEquals(0, count("tiny#0 <- AdapterCheckpoint"));
  }
}
