package dev.troupe.training;

import dev.troupe.engine.LoraAdapter;
import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.model.WeightSource;
import dev.troupe.protocol.cluster.TrainingConfig;
import dev.troupe.training.nd4j.LoraSpec;
import java.util.Map;

/**
 * Where a {@link Trainer}'s per-row work runs: the model with its trained parameters, ART's loss
 * and the optimizer. The trainer keeps everything else (batching, packing, metrics, checkpoints),
 * so there is one training loop whatever computes it: {@link Nd4jTrainingBackend} on the CPU, or
 * {@link CudaTrainingBackend} on a GPU, chosen by where the node serves its models ({@link
 * TrainingBackends}). Both start from {@link LoraSpec#initialParameters} and keep AdamW's state in
 * the same form, so a checkpoint written by one resumes on the other.
 *
 * <p>Thread: confined to the trainer's thread.
 */
public interface TrainingBackend extends AutoCloseable {

  /** Opens a backend for one model. */
  interface Factory {
    /**
     * @param maxSequenceLength the packed row length (device buffers are sized for it)
     */
    TrainingBackend open(
        ModelConfig config,
        WeightSource weights,
        LoraSpec lora,
        AdamW.Hyper optimizer,
        int maxSequenceLength);

    /** What computes, for logs ("CPU (ND4J)", "cuda:0 NVIDIA H100 …"). */
    String describe();

    /**
     * Whether it holds one model's trainer at a time: a serving replica's runner kept memory for
     * one, so opening another closes the one before.
     */
    default boolean oneAtATime() {
      return false;
    }
  }

  /**
   * One optimizer step's figures.
   *
   * @param loss the row's RL loss
   * @param entropy ART's logged entropy: Σ H_t·w_t over the trained targets / their count
   * @param gradNorm the global gradient norm before clipping
   */
  record Step(double loss, double entropy, double gradNorm) {}

  ModelConfig config();

  /**
   * Whether the backend can still train: false once what it runs on went away (a serving replica's
   * GPU whose replica stopped); its trainer is then loaded again.
   */
  default boolean usable() {
    return true;
  }

  /** What computes, for logs and the job's metrics. */
  String device();

  /**
   * Log-probabilities of the targets marked in {@code needed} (entry t scores {@code tokens[t +
   * 1]}; unmarked entries read 0) under the current parameters.
   */
  double[] logprobs(int[] tokens, int[] positions, int[] segments, boolean[] needed);

  /** The current policy's log-probabilities of the token after {@code tokens}, whole vocabulary. */
  double[] nextTokenLogprobs(int[] tokens);

  /**
   * One optimizer step on one packed row: forward, ART's loss with {@code config} (its learning
   * rate for AdamW), backward, gradient clipping, AdamW.
   */
  Step step(PackedRow row, TrainingConfig config);

  /** The trained parameters by name (a snapshot: the checkpoint's tensors). */
  Map<String, double[]> parameters();

  /** Shape of every trained parameter. */
  Map<String, long[]> shapes();

  /** The adapters as a served adapter; not available under full fine-tuning. */
  LoraAdapter adapter(int version);

  /** AdamW's moments and step count (a snapshot). */
  AdamW.State optimizerState();

  /** Sets the parameters and AdamW's state (null: a fresh optimizer), e.g. from a checkpoint. */
  void restore(Map<String, double[]> parameters, AdamW.State optimizer);

  /** Frees what the backend holds (device memory). */
  @Override
  void close();
}
