package dev.troupe.training;

import dev.troupe.engine.LoraAdapter;
import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.cuda.CudaException;
import dev.troupe.engine.cuda.CudaTrainer;
import dev.troupe.engine.cuda.Gpu;
import dev.troupe.engine.model.WeightSource;
import dev.troupe.protocol.cluster.TrainingConfig;
import dev.troupe.training.nd4j.LoraSpec;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Function;

/**
 * Training on a GPU: the CUDA runner's training mode ({@link CudaTrainer}) does the forward, ART's
 * loss, the backward and AdamW on the device; the host sends each row's token ids and loss inputs
 * and reads back three numbers per step. LoRA only: full fine-tuning is refused (it runs on the
 * CPU).
 */
final class CudaTrainingBackend implements TrainingBackend {
  private final CudaTrainer trainer;
  private final CudaTrainer.Adam adam;

  CudaTrainingBackend(CudaTrainer trainer, LoraSpec lora, AdamW.Hyper hyper) {
    this.trainer = trainer;
    this.adam =
        new CudaTrainer.Adam(
            hyper.beta1(), hyper.beta2(), hyper.eps(), hyper.weightDecay(), hyper.maxGradNorm());
    try {
      trainer.parameters(lora.initialParameters(trainer.config()));
    } catch (RuntimeException e) {
      trainer.close();
      throw e;
    }
  }

  /** A factory opening one GPU per model trainer with {@code gpus} (the kernels for its config). */
  static TrainingBackend.Factory factory(String description, Function<ModelConfig, Gpu> gpus) {
    return new TrainingBackend.Factory() {
      @Override
      public TrainingBackend open(
          ModelConfig config, WeightSource weights, LoraSpec lora, AdamW.Hyper hyper, int maxLen) {
        if (lora.fullFineTune())
          throw new IllegalArgumentException(
              "full fine-tuning (troupe.training.full-fine-tune) runs on the CPU only; the GPU "
                  + "trains LoRA adapters");
        CudaTrainer t;
        try {
          t =
              CudaTrainer.load(
                  gpus.apply(config),
                  config,
                  weights,
                  new CudaTrainer.Adapter(lora.rank(), lora.alpha(), lora.targets()),
                  maxLen);
        } catch (CudaException e) {
          throw new CudaException(
              "training on "
                  + description
                  + " needs its own copy of the weights and about "
                  + (CudaTrainer.workspaceBytes(config, lora.rank(), maxLen) >> 20)
                  + " MiB of work buffers beside what the serving replicas took (their"
                  + " --gpu-memory-utilization; docs/training.md, \"Sharing the GPU\"): "
                  + e.getMessage());
        }
        return new CudaTrainingBackend(t, lora, hyper);
      }

      @Override
      public String describe() {
        return description;
      }
    };
  }

  @Override
  public ModelConfig config() {
    return trainer.config();
  }

  @Override
  public String device() {
    return trainer.device();
  }

  @Override
  public double[] logprobs(int[] tokens, int[] positions, int[] segments, boolean[] needed) {
    return trainer.score(tokens, positions, segments, needed).logprobs();
  }

  @Override
  public double[] nextTokenLogprobs(int[] tokens) {
    return trainer.nextTokenLogprobs(tokens);
  }

  @Override
  public Step step(PackedRow row, TrainingConfig config) {
    CudaTrainer.Step s =
        trainer.step(
            row.tokens(),
            row.positions(),
            row.segments(),
            new CudaTrainer.Targets(
                row.mask(), row.oldLogprobs(), row.advantages(), row.weights(), row.historyIds()),
            config,
            adam,
            config.learningRate());
    return new Step(s.loss(), s.entropy(), s.gradNorm());
  }

  @Override
  public Map<String, double[]> parameters() {
    return trainer.parameters();
  }

  @Override
  public Map<String, long[]> shapes() {
    return trainer.shapes();
  }

  @Override
  public LoraAdapter adapter(int version) {
    return trainer.adapter(version);
  }

  @Override
  public AdamW.State optimizerState() {
    CudaTrainer.OptimizerState s = trainer.optimizerState();
    return new AdamW.State(s.step(), s.m(), s.v());
  }

  @Override
  public void restore(Map<String, double[]> parameters, AdamW.State state) {
    trainer.parameters(parameters);
    // a state saved before any step holds no moments (the CPU optimizer makes them lazily)
    if (state != null && !state.m().isEmpty()) {
      trainer.optimizerState(new CudaTrainer.OptimizerState(state.step(), state.m(), state.v()));
      return;
    }
    Map<String, double[]> zero = new LinkedHashMap<>();
    trainer.shapes().forEach((k, v) -> zero.put(k, new double[(int) (v[0] * v[1])]));
    trainer.optimizerState(
        new CudaTrainer.OptimizerState(state == null ? 0 : state.step(), zero, zero));
  }

  @Override
  public void close() {
    trainer.close();
  }
}
