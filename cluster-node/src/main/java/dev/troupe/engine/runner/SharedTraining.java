package dev.troupe.engine.runner;

import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.cuda.CudaTrainer;
import java.util.List;

/**
 * Training on the serving GPU ({@code troupe.training.share-serving-gpu} on a node that serves and
 * trains): the adapter shape and row length a trainer on a replica's runner is sized for, so the
 * runner keeps that trainer's memory out of its KV cache and {@code --gpu-memory-utilization}
 * covers weights, KV cache and training together.
 *
 * @param rank LoRA rank ({@code troupe.training.lora.rank})
 * @param targets the adapted projections ({@code troupe.training.lora.target-modules})
 * @param maxSequenceLength packed row length ({@code troupe.training.max-sequence-length})
 */
public record SharedTraining(int rank, List<String> targets, int maxSequenceLength) {
  public SharedTraining {
    targets = List.copyOf(targets);
    new CudaTrainer.Adapter(rank, 1, targets); // validates rank and names
    if (maxSequenceLength < 2)
      throw new IllegalArgumentException("max sequence length must be >= 2");
  }

  /**
   * Bytes a GPU runner of {@code cfg} keeps from its KV cache ({@link CudaTrainer#reservedBytes}).
   */
  public long bytes(ModelConfig cfg) {
    return CudaTrainer.reservedBytes(
        cfg, new CudaTrainer.Adapter(rank, 1, targets), maxSequenceLength);
  }
}
