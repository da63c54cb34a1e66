package dev.troupe.training;

import dev.troupe.engine.LoraAdapter;
import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.cuda.CudaModelRunner;
import dev.troupe.engine.cuda.CudaTrainer;
import dev.troupe.engine.model.WeightSource;
import dev.troupe.protocol.cluster.TrainingConfig;
import dev.troupe.training.nd4j.LoraSpec;
import dev.troupe.worker.GpuReplicas;
import java.util.Map;
import java.util.concurrent.CompletionException;
import java.util.function.Function;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Training on a serving replica's GPU (ART's shared mode): a {@link CudaTrainingBackend} over the
 * replica's own runner ({@code CudaModelRunner.trainer}: its base weights, no second copy), every
 * call run on the replica's engine thread between two engine steps ({@link GpuReplicas.Replica}).
 * Generation pauses for each call — one optimizer step on one packed row, a scoring pass, a
 * download of the adapters — and resumes; the requests in flight keep their KV blocks and adapters.
 * The training loop itself (tokenizing, packing, checkpoints) stays on the node's training thread.
 *
 * <p>When the replica stops, the runner closes the trainer with it; the next call fails with {@link
 * GpuReplicas.ReplicaStopped} and {@link #usable} says false, so {@link Trainers} reloads the model
 * from its latest checkpoint for the next job.
 */
final class ServingGpuBackend implements TrainingBackend {
  private static final Logger log = LoggerFactory.getLogger(ServingGpuBackend.class);
  private final GpuReplicas.Replica replica;
  private final CudaTrainingBackend onDevice; // used on the replica's engine thread only
  private final String device;

  private ServingGpuBackend(
      GpuReplicas.Replica replica, CudaTrainingBackend onDevice, String device) {
    this.replica = replica;
    this.onDevice = onDevice;
    this.device = device;
  }

  /** Opens trainers on {@code replica}'s runner. */
  static TrainingBackend.Factory factory(GpuReplicas.Replica replica) {
    return new TrainingBackend.Factory() {
      @Override
      public TrainingBackend open(
          ModelConfig config, WeightSource weights, LoraSpec lora, AdamW.Hyper hyper, int maxLen) {
        if (lora.fullFineTune())
          throw new IllegalArgumentException(
              "full fine-tuning (troupe.training.full-fine-tune) runs on the CPU only; the GPU "
                  + "trains LoRA adapters");
        CudaTrainer.Adapter adapter =
            new CudaTrainer.Adapter(lora.rank(), lora.alpha(), lora.targets());
        Opened o =
            call(
                replica,
                runner -> {
                  if (!runner.config().equals(config))
                    throw new IllegalStateException(
                        replica.entityId() + " serves another architecture than the base model's");
                  CudaTrainer t = runner.trainer(adapter, maxLen);
                  return new Opened(new CudaTrainingBackend(t, lora, hyper), t.device());
                });
        log.info(
            "Training on {}'s runner, between its engine steps ({})",
            replica.entityId(),
            o.device());
        return new ServingGpuBackend(
            replica, o.backend(), replica.entityId() + "'s GPU (shared), " + o.device());
      }

      @Override
      public String describe() {
        return replica.entityId() + "'s GPU (shared with serving)";
      }

      @Override
      public boolean oneAtATime() {
        return true; // the replica's KV cache left room for one trainer
      }
    };
  }

  private record Opened(CudaTrainingBackend backend, String device) {}

  /** Runs {@code work} on the replica's engine thread and waits for it. */
  private static <T> T call(GpuReplicas.Replica replica, Function<CudaModelRunner, T> work) {
    try {
      return replica.call(work).join();
    } catch (CompletionException e) {
      if (e.getCause() instanceof RuntimeException r) throw r;
      if (e.getCause() instanceof Error err) throw err;
      throw e;
    }
  }

  private <T> T on(Supplier<T> work) {
    return call(replica, runner -> work.get());
  }

  @Override
  public boolean usable() {
    return replica.isOpen();
  }

  @Override
  public ModelConfig config() {
    return onDevice.config();
  }

  @Override
  public String device() {
    return device;
  }

  @Override
  public double[] logprobs(int[] tokens, int[] positions, int[] segments, boolean[] needed) {
    return on(() -> onDevice.logprobs(tokens, positions, segments, needed));
  }

  @Override
  public double[] nextTokenLogprobs(int[] tokens) {
    return on(() -> onDevice.nextTokenLogprobs(tokens));
  }

  @Override
  public Step step(PackedRow row, TrainingConfig config) {
    return on(() -> onDevice.step(row, config));
  }

  @Override
  public Map<String, double[]> parameters() {
    return on(onDevice::parameters);
  }

  @Override
  public Map<String, long[]> shapes() {
    return on(onDevice::shapes);
  }

  @Override
  public LoraAdapter adapter(int version) {
    return on(() -> onDevice.adapter(version));
  }

  @Override
  public AdamW.State optimizerState() {
    return on(onDevice::optimizerState);
  }

  @Override
  public void restore(Map<String, double[]> parameters, AdamW.State optimizer) {
    on(
        () -> {
          onDevice.restore(parameters, optimizer);
          return null;
        });
  }

  /**
   * Frees the trainer's buffers on the replica's thread; a stopped replica's runner did already.
   */
  @Override
  public void close() {
    if (!replica.isOpen()) return;
    try {
      on(
          () -> {
            onDevice.close();
            return null;
          });
    } catch (GpuReplicas.ReplicaStopped closedWithTheRunner) {
      // the runner closed its trainers as it closed
    }
  }
}
