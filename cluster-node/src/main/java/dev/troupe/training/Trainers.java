package dev.troupe.training;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.adapters.CheckpointStore;
import dev.troupe.engine.ChatTemplate;
import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.Tokenizer;
import dev.troupe.engine.model.WeightSource;
import dev.troupe.protocol.Json;
import dev.troupe.protocol.cluster.TrainingConfig;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.BooleanSupplier;
import java.util.function.Function;

/**
 * The node's training thread and the {@link Trainer} of each model it trained last (weights,
 * adapters, optimizer state), kept between jobs and reloaded from the latest checkpoint when
 * another node trained the model in between. Runs are queued on the one thread (ND4J's rule).
 *
 * <p>Thread: {@link #train} from any thread; everything else happens on the training thread.
 */
public final class Trainers implements AutoCloseable {

  /**
   * Resolves a trainable model's {@code base_model} name to its architecture, weights and text
   * side.
   */
  public interface BaseModels {
    Loaded load(String baseModel);

    record Loaded(
        ModelConfig config, WeightSource weights, Tokenizer tokenizer, ChatTemplate template) {}
  }

  /**
   * One job to train: checkpoint {@code latestStep + 1} of {@code modelId} from its latest one.
   *
   * @param latestArtifact the latest checkpoint's directory, null for step 0 (the base model)
   * @param groups the job's trajectory groups, JSON bytes
   */
  public record Job(
      String modelId,
      String baseModel,
      long latestStep,
      String latestArtifact,
      List<byte[]> groups,
      TrainingConfig config) {
    public Job {
      groups = List.copyOf(groups);
    }
  }

  private final BaseModels baseModels;
  private final Trainer.Settings settings;
  private final Function<String, TrainingBackend.Factory> backends;
  private final CheckpointStore store;
  private final ExecutorService thread;

  /** Training thread only. */
  private final Map<String, Loaded> loaded = new HashMap<>();

  private record Loaded(Trainer trainer, long step, String device) {}

  public Trainers(
      BaseModels baseModels,
      Trainer.Settings settings,
      TrainingBackend.Factory backends,
      CheckpointStore store) {
    this(baseModels, settings, baseModel -> backends, store);
  }

  /**
   * @param backends what trains a base model's adapters, asked at every job (a serving replica's
   *     GPU while one serves the model on this node, else the node's backend)
   */
  public Trainers(
      BaseModels baseModels,
      Trainer.Settings settings,
      Function<String, TrainingBackend.Factory> backends,
      CheckpointStore store) {
    this.baseModels = baseModels;
    this.settings = settings;
    this.backends = backends;
    this.store = store;
    this.thread =
        Executors.newSingleThreadExecutor(
            r -> {
              Thread t = new Thread(r, "troupe-trainer");
              t.setDaemon(true);
              return t;
            });
  }

  /**
   * Trains {@code job} on the training thread, reporting to {@code progress} there; stops at the
   * next optimizer step (nothing stored) once {@code cancelled} says so.
   */
  public CompletableFuture<Trainer.Result> train(
      Job job, Trainer.Listener progress, BooleanSupplier cancelled) {
    return CompletableFuture.supplyAsync(() -> run(job, progress, cancelled), thread);
  }

  private Trainer.Result run(Job job, Trainer.Listener progress, BooleanSupplier cancelled) {
    check(cancelled);
    Trainer trainer = trainerAt(job);
    List<JsonNode> groups = new ArrayList<>();
    for (byte[] g : job.groups()) groups.add(parse(g));
    Trainer.Result result;
    try {
      result =
          trainer.train(
              job.latestStep() + 1,
              groups,
              job.config(),
              new Trainer.Listener() {
                @Override
                public void started(int numSequences) {
                  check(cancelled);
                  progress.started(numSequences);
                }

                @Override
                public void gradientStep(int index, Map<String, Double> metrics) {
                  progress.gradientStep(index, metrics);
                  check(cancelled); // before the next step, and before the checkpoint is stored
                }
              });
    } catch (RuntimeException e) {
      drop(job.modelId()); // the adapters may be half-updated: reload next time
      throw e;
    }
    // if the step is not listed after all, the next job's latest step differs and reloads
    loaded.put(job.modelId(), new Loaded(trainer, result.step(), trainer.backendName()));
    return result;
  }

  /** The model's trainer at its latest checkpoint: the one in memory, or loaded. */
  private Trainer trainerAt(Job job) {
    TrainingBackend.Factory backend = backends.apply(job.baseModel());
    Loaded l = loaded.get(job.modelId());
    // kept while it can train where this job should (a replica's GPU came or went: load again)
    if (l != null
        && l.step() == job.latestStep()
        && l.trainer().usable()
        && l.device().equals(backend.describe())) return l.trainer();
    drop(job.modelId());
    if (backend.oneAtATime()) // another model's trainer there goes first (reloaded when needed)
    for (Map.Entry<String, Loaded> e : List.copyOf(loaded.entrySet()))
        if (e.getValue().device().equals(backend.describe())) drop(e.getKey());
    BaseModels.Loaded base = baseModels.load(job.baseModel());
    Trainer t =
        new Trainer(
            job.modelId(),
            job.baseModel(),
            base.config(),
            base.weights(),
            new TrajectoryTokenizer(base.tokenizer(), base.template()),
            settings,
            store,
            backend);
    try {
      if (job.latestArtifact() != null) t.restore(Path.of(job.latestArtifact()));
    } catch (RuntimeException e) {
      t.close();
      throw e;
    }
    return t;
  }

  /** Forgets the model's trainer, freeing what its backend holds (a GPU's memory). */
  private void drop(String modelId) {
    Loaded old = loaded.remove(modelId);
    if (old != null) old.trainer().close();
  }

  private static JsonNode parse(byte[] group) {
    try {
      return Json.mapper().readTree(group);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static void check(BooleanSupplier cancelled) {
    if (cancelled.getAsBoolean()) throw new CancellationException("the run was stopped");
  }

  /**
   * Closes the trainers on the training thread, then stops it (a run on it ends at its next
   * optimizer step).
   */
  @Override
  public void close() {
    try {
      thread.submit(() -> List.copyOf(loaded.keySet()).forEach(this::drop));
    } catch (java.util.concurrent.RejectedExecutionException closedAlready) {
      return;
    }
    thread.shutdown();
  }
}
