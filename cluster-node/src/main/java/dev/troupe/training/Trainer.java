package dev.troupe.training;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.adapters.CheckpointStore;
import dev.troupe.engine.LoraAdapter;
import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.model.WeightSource;
import dev.troupe.protocol.cluster.TrainingConfig;
import dev.troupe.training.nd4j.LoraSpec;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The training loop of one model, plain Java: trajectory groups → packed rows → for each row one
 * forward/backward and one AdamW step (ART: batch size one row) → checkpoint. The per-row work runs
 * on a {@link TrainingBackend} (the CPU or a GPU, the same loop either way), which keeps the
 * adapters and optimizer state between jobs; {@link #restore} picks them up from a checkpoint after
 * a restart.
 *
 * <p>Thread: not thread-safe; the owner runs it on one dedicated thread (ND4J's rule, and a GPU
 * backend's).
 */
public final class Trainer implements AutoCloseable {
  private final String modelId;
  private final String baseModel;
  private final TrajectoryTokenizer tokenizer;
  private final Settings settings;
  private final CheckpointStore store;
  private final TrainingBackend backend;
  private final String backendName;

  /**
   * @param maxSequenceLength packed row length
   * @param lora adapter shape (or full fine-tuning)
   * @param optimizer AdamW betas, weight decay, gradient clipping
   */
  public record Settings(int maxSequenceLength, LoraSpec lora, AdamW.Hyper optimizer) {
    public static final Settings DEFAULT = new Settings(2048, LoraSpec.DEFAULT, AdamW.Hyper.ART);

    public Settings {
      if (maxSequenceLength < 2)
        throw new IllegalArgumentException("max sequence length must be >= 2");
    }
  }

  /** Progress callbacks, called on the trainer's thread in order. */
  public interface Listener {
    void started(int numSequences);

    void gradientStep(int index, Map<String, Double> metrics);
  }

  /**
   * @param checkpoint the stored step's directory
   * @param adapter the new adapter to serve (null under full fine-tuning)
   * @param metrics averaged {@code train/*} metrics for the checkpoint listing
   */
  public record Result(
      long step, Path checkpoint, LoraAdapter adapter, Map<String, Double> metrics) {}

  public Trainer(
      String modelId,
      String baseModel,
      ModelConfig config,
      WeightSource weights,
      TrajectoryTokenizer tokenizer,
      Settings settings,
      CheckpointStore store,
      TrainingBackend.Factory backends) {
    this.modelId = modelId;
    this.baseModel = baseModel;
    this.tokenizer = tokenizer;
    this.settings = settings;
    this.store = store;
    this.backendName = backends.describe();
    this.backend =
        backends.open(
            config, weights, settings.lora(), settings.optimizer(), settings.maxSequenceLength());
  }

  /** Loads adapters and optimizer state from a checkpoint written by this class. */
  public void restore(Path checkpointDir) {
    CheckpointStore.Saved saved = CheckpointStore.load(checkpointDir);
    Map<String, long[]> shapes = backend.shapes();
    for (Map.Entry<String, long[]> e : shapes.entrySet()) {
      double[] v = saved.parameters().get(e.getKey());
      long n = 1;
      for (long d : e.getValue()) n *= d;
      if (v == null || v.length != n)
        throw new IllegalStateException(
            checkpointDir + " does not match the adapter shape at " + e.getKey());
    }
    CheckpointStore.OptimizerState o = saved.optimizer();
    backend.restore(saved.parameters(), o == null ? null : new AdamW.State(o.step(), o.m(), o.v()));
  }

  /** What opened the backend ({@link TrainingBackend.Factory#describe}). */
  public String backendName() {
    return backendName;
  }

  /** Whether the backend can still train ({@link TrainingBackend#usable}). */
  public boolean usable() {
    return backend.usable();
  }

  /** Where the per-row work runs. */
  public String device() {
    return backend.device();
  }

  /** The currently trained adapter (what a checkpoint of this step holds). */
  public LoraAdapter adapter(int version) {
    return backend.adapter(version);
  }

  /**
   * Log-probabilities of {@code tokens[t + 1]} after {@code tokens[..t]} under the current weights.
   */
  public double[] score(int[] tokens) {
    int[] positions = new int[tokens.length];
    for (int i = 0; i < positions.length; i++) positions[i] = i;
    return backend.logprobs(tokens, positions, new int[tokens.length], null);
  }

  /** The current policy's log-probabilities of the token after {@code tokens}, whole vocabulary. */
  public double[] nextTokenLogprobs(int[] tokens) {
    return backend.nextTokenLogprobs(tokens);
  }

  /** Runs one job and stores checkpoint {@code step}, even when nothing was trainable. */
  public Result train(long step, List<JsonNode> groups, TrainingConfig config, Listener listener) {
    TrainingBatch batch =
        TrainingBatch.build(
            groups,
            tokenizer,
            config.scaleRewards(),
            config.advantageBalance(),
            settings.maxSequenceLength());
    List<PackedRow> rows = batch.rows();
    int vocab = backend.config().vocabSize();
    for (PackedRow row : rows)
      for (int id : row.tokens())
        if (id < 0 || id >= vocab)
          throw new IllegalArgumentException(
              "token id " + id + " is outside the model's vocabulary of " + vocab);
    listener.started(rows.size());
    if (config.precalculateLogprobs()) {
      // π_old := the job's starting policy, so ratios measure this job's own drift
      for (PackedRow row : rows) {
        double[] lp = backend.logprobs(row.tokens(), row.positions(), row.segments(), row.mask());
        for (int t = 0; t < row.length(); t++) if (row.mask()[t]) row.oldLogprobs()[t] = lp[t];
      }
    }
    Map<String, Double> sums = new LinkedHashMap<>();
    for (int i = 0; i < rows.size(); i++) {
      PackedRow row = rows.get(i);
      long start = System.nanoTime();
      TrainingBackend.Step done = backend.step(row, config);
      double seconds = (System.nanoTime() - start) / 1e9;
      Map<String, Double> m = new LinkedHashMap<>();
      m.put("loss", done.loss());
      m.put("policy_loss", done.loss());
      m.put("entropy", done.entropy());
      m.put("grad_norm", done.gradNorm());
      m.put("learning_rate", config.learningRate());
      m.putAll(batch.metrics());
      m.put("num_trainable_tokens", (double) row.numTrainable());
      m.put("num_tokens", (double) row.length());
      m.put("tokens_per_second", row.length() / Math.max(seconds, 1e-9));
      listener.gradientStep(i, m);
      for (Map.Entry<String, Double> e : m.entrySet())
        sums.merge(e.getKey(), e.getValue(), Double::sum);
    }
    Map<String, Double> metrics = new LinkedHashMap<>();
    for (Map.Entry<String, Double> e : batch.metrics().entrySet())
      metrics.put("train/" + e.getKey(), e.getValue());
    for (String k : List.of("loss", "entropy", "grad_norm", "tokens_per_second"))
      if (sums.containsKey(k)) metrics.put("train/" + k, sums.get(k) / rows.size());
    metrics.put("train/num_gradient_steps", (double) rows.size());
    Path dir =
        store.save(
            modelId,
            step,
            new CheckpointStore.AdapterConfig(
                baseModel,
                settings.lora().rank(),
                settings.lora().alpha(),
                settings.lora().targets()),
            backend.parameters(),
            backend.shapes(),
            optimizerState());
    LoraAdapter adapter = settings.lora().fullFineTune() ? null : backend.adapter((int) step);
    return new Result(step, dir, adapter, metrics);
  }

  private CheckpointStore.OptimizerState optimizerState() {
    AdamW.State s = backend.optimizerState();
    return new CheckpointStore.OptimizerState(s.step(), s.m(), s.v());
  }

  /** Frees the backend (a GPU backend's device memory). */
  @Override
  public void close() {
    backend.close();
  }
}
