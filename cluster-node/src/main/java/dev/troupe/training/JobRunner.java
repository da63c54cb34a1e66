package dev.troupe.training;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.adapters.CheckpointStore;
import dev.troupe.engine.ChatTemplate;
import dev.troupe.engine.LoraAdapter;
import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.Tokenizer;
import dev.troupe.engine.model.WeightSource;
import dev.troupe.protocol.Json;
import dev.troupe.protocol.cluster.TrainableModelProtocol;
import dev.troupe.protocol.cluster.TrainingJobProtocol;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.RecipientRef;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs one training job start to finish on the node's training thread: fetch the job, find the
 * model and its latest checkpoint, train, store the checkpoint, list it with the model, publish it
 * to the workers, then mark the job succeeded — or failed, with the reason, whatever goes wrong.
 * Keeps one {@link Trainer} per model in memory (weights, adapters, optimizer state) and reloads it
 * from the latest checkpoint when another node trained the model in between.
 *
 * <p>Thread: {@link #run} blocks and must be called from one thread at a time (ND4J's rule, and a
 * GPU backend's).
 */
public final class JobRunner {
  private static final Logger log = LoggerFactory.getLogger(JobRunner.class);

  /**
   * Resolves a trainable model's {@code base_model} name to its architecture, weights and text
   * side.
   */
  public interface BaseModels {
    Loaded load(String baseModel);

    record Loaded(
        ModelConfig config, WeightSource weights, Tokenizer tokenizer, ChatTemplate template) {}
  }

  /** Told about every stored checkpoint (the workers switch to it). */
  public interface CheckpointListener {
    void published(
        String modelId, String baseModel, long step, Path directory, LoraAdapter adapter);
  }

  private final ActorSystem<?> system;
  private final Function<String, RecipientRef<TrainingJobProtocol.Command>> jobs;
  private final Function<String, RecipientRef<TrainableModelProtocol.Command>> models;
  private final BaseModels baseModels;
  private final Trainer.Settings settings;
  private final TrainingBackend.Factory backends;
  private final CheckpointStore store;
  private final CheckpointListener listener;
  private final Duration askTimeout;
  private final Map<String, Loaded> trainers = new ConcurrentHashMap<>();
  private final Set<String> running = ConcurrentHashMap.newKeySet();

  private record Loaded(Trainer trainer, long step) {}

  public JobRunner(
      ActorSystem<?> system,
      Function<String, RecipientRef<TrainingJobProtocol.Command>> jobs,
      Function<String, RecipientRef<TrainableModelProtocol.Command>> models,
      BaseModels baseModels,
      Trainer.Settings settings,
      TrainingBackend.Factory backends,
      CheckpointStore store,
      CheckpointListener listener,
      Duration askTimeout) {
    this.system = system;
    this.jobs = jobs;
    this.models = models;
    this.baseModels = baseModels;
    this.settings = settings;
    this.backends = backends;
    this.store = store;
    this.listener = listener;
    this.askTimeout = askTimeout;
  }

  /** Whether this node is running {@code jobId} right now. */
  public boolean isRunning(String jobId) {
    return running.contains(jobId);
  }

  /** Runs the job; never throws for a job-level failure (the job is marked failed instead). */
  public void run(String jobId) {
    if (!running.add(jobId)) return;
    try {
      TrainingJobProtocol.PayloadReply reply =
          ask(jobs.apply(jobId), TrainingJobProtocol.GetPayload::new);
      if (!(reply instanceof TrainingJobProtocol.Payload payload)) return;
      switch (payload.status()) {
        case SUCCEEDED, FAILED -> {
          return;
        }
        case RUNNING -> {
          // it started on a trainer that is gone: its steps cannot be replayed into the same stream
          fail(
              jobId,
              "the trainer running this job was lost (node left or restarted); submit the job again");
          return;
        }
        case QUEUED -> train(payload);
      }
    } catch (Exception e) {
      log.warn("Training job {} failed", jobId, e);
      try {
        fail(jobId, e.getMessage() == null ? e.toString() : e.getMessage());
      } catch (Exception again) {
        log.error("Could not record the failure of training job {}", jobId, again);
      }
    } finally {
      running.remove(jobId);
    }
  }

  private void train(TrainingJobProtocol.Payload payload) throws Exception {
    String modelId = payload.modelId();
    TrainableModelProtocol.ModelReply m =
        ask(models.apply(modelId), TrainableModelProtocol.Get::new);
    if (!(m instanceof TrainableModelProtocol.ModelFound found))
      throw new IllegalStateException("model " + modelId + " not found");
    long latest = found.latest().step();
    Loaded loaded = trainers.get(modelId);
    if (loaded == null || loaded.step() != latest) {
      drop(modelId);
      BaseModels.Loaded base = baseModels.load(found.info().baseModel());
      Trainer t =
          new Trainer(
              modelId,
              found.info().baseModel(),
              base.config(),
              base.weights(),
              new TrajectoryTokenizer(base.tokenizer(), base.template()),
              settings,
              store,
              backends);
      try {
        if (found.latest().artifact() != null) t.restore(Path.of(found.latest().artifact()));
      } catch (RuntimeException e) {
        t.close();
        throw e;
      }
      loaded = new Loaded(t, latest);
    }
    List<JsonNode> groups = new ArrayList<>();
    for (byte[] g : payload.groups()) groups.add(Json.mapper().readTree(g));
    String jobId = payload.jobId();
    Trainer.Result result;
    try {
      result =
          loaded
              .trainer()
              .train(
                  latest + 1,
                  groups,
                  payload.config(),
                  new Trainer.Listener() {
                    @Override
                    public void started(int numSequences) {
                      record(jobId, r -> new TrainingJobProtocol.MarkStarted(numSequences, r));
                    }

                    @Override
                    public void gradientStep(int index, Map<String, Double> metrics) {
                      record(jobId, r -> new TrainingJobProtocol.RecordStep(metrics, r));
                    }
                  });
    } catch (RuntimeException e) {
      // the adapters may be half-updated: reload from the checkpoint next time
      loaded.trainer().close();
      drop(modelId);
      throw e;
    }
    TrainableModelProtocol.ModelReply added =
        ask(
            models.apply(modelId),
            r ->
                new TrainableModelProtocol.AddCheckpoint(
                    result.step(), result.metrics(), result.checkpoint().toString(), r));
    if (!(added instanceof TrainableModelProtocol.ModelFound)) {
      loaded.trainer().close();
      drop(modelId);
      throw new IllegalStateException("the checkpoint was not listed: " + added);
    }
    trainers.put(modelId, new Loaded(loaded.trainer(), result.step()));
    try {
      listener.published(
          modelId, found.info().baseModel(), result.step(), result.checkpoint(), result.adapter());
    } catch (RuntimeException e) {
      log.warn("Publishing step {} of model {} to the workers failed", result.step(), modelId, e);
    }
    record(jobId, r -> new TrainingJobProtocol.MarkSucceeded(result.step(), r));
    log.info("Training job {} stored step {} of model {}", jobId, result.step(), modelId);
  }

  /** Forgets the model's trainer, freeing what its backend holds (a GPU's memory). */
  private void drop(String modelId) {
    Loaded old = trainers.remove(modelId);
    if (old != null) old.trainer().close();
  }

  private void fail(String jobId, String message) {
    record(jobId, r -> new TrainingJobProtocol.MarkFailed(message, r));
  }

  private void record(
      String jobId,
      org.apache.pekko.japi.function.Function<
              ActorRef<TrainingJobProtocol.Recorded>, TrainingJobProtocol.Command>
          msg) {
    ask(jobs.apply(jobId), msg);
  }

  private <T, R> R ask(
      RecipientRef<T> to, org.apache.pekko.japi.function.Function<ActorRef<R>, T> msg) {
    try {
      return AskPattern.<T, R>ask(to, msg, askTimeout, system.scheduler())
          .toCompletableFuture()
          .get(askTimeout.toMillis() + 1000, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    } catch (ExecutionException | TimeoutException e) {
      throw new IllegalStateException("no answer from " + to + ": " + e.getMessage(), e);
    }
  }
}
