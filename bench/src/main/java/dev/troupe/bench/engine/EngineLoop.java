package dev.troupe.bench.engine;

import com.typesafe.config.ConfigFactory;
import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.ModelRunner;
import dev.troupe.engine.core.EngineRequest;
import dev.troupe.engine.core.EngineSettings;
import dev.troupe.engine.core.Rejection;
import dev.troupe.engine.model.Quantization;
import dev.troupe.engine.output.RequestUpdate;
import dev.troupe.engine.runner.ModelRunners;
import dev.troupe.engine.sampling.EosTokens;
import dev.troupe.engine.sampling.LogitsProcessorRegistry;
import dev.troupe.engine.sampling.SamplerFactory;
import dev.troupe.engine.serving.Engine;
import dev.troupe.engine.tokenizer.TokenizerBundle;
import dev.troupe.protocol.cluster.SamplingDefaults;
import dev.troupe.protocol.cluster.SamplingParams;
import dev.troupe.scheduler.SchedulingPolicy;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * Batch-1 decode through the whole engine (scheduler, forward pass, sampler, output processor and
 * detokenizer) without the worker, the actors or HTTP: requests of a {@code context}-token random
 * prompt and 128 greedy new tokens ({@code ignore_eos}), one at a time, on a model directory as
 * {@code troupe serve} loads it. Prints per round the decode rate (steps after the first token),
 * the mean forward pass and the mean rest of a step, so that a server's batch-1 figure can be split
 * into the engine's part and the serving path's. Args: {@code model-dir [context=256] [rounds=8]
 * [groups-per-round=4] [streams=1] [new-tokens=128]}: a group is {@code streams} requests added
 * together and run to the end; run with {@code --add-modules jdk.incubator.vector}. The system
 * property {@code troupe.worker.device.quantization} ({@code q8_0}) loads the weights 8-bit.
 */
public final class EngineLoop {
  private EngineLoop() {}

  public static void main(String[] a) {
    Path dir = Path.of(a[0]);
    int context = a.length > 1 ? Integer.parseInt(a[1]) : 256;
    int rounds = a.length > 2 ? Integer.parseInt(a[2]) : 8;
    int perRound = a.length > 3 ? Integer.parseInt(a[3]) : 4;
    int streams = a.length > 4 ? Integer.parseInt(a[4]) : 1;
    int newTokens = a.length > 5 ? Integer.parseInt(a[5]) : 128;
    EngineSettings settings =
        EngineSettings.fromConfig(ConfigFactory.load().getConfig("troupe.worker.engine"));
    Quantization quantization =
        Quantization.parse(ConfigFactory.load().getString("troupe.worker.device.quantization"));
    TimedRunner runner =
        new TimedRunner(
            ModelRunners.open(
                dir, "auto", quantization, settings.numBlocks(), settings.blockSize()));
    TokenizerBundle text = TokenizerBundle.loadShared(dir);
    try (Engine engine =
        Engine.create(
            dir.getFileName().toString(),
            runner,
            text,
            settings,
            SchedulingPolicy.FCFS,
            null,
            SamplingDefaults.NONE)) {
      ModelConfig c = runner.config();
      SplittableRandom r = new SplittableRandom(1);
      SamplerFactory samplers =
          new SamplerFactory(
              c.vocabSize(),
              text.tokenizer(),
              EosTokens.of(-1, c.eosTokenIds()),
              LogitsProcessorRegistry.none());
      SamplingParams p =
          SamplingParams.builder()
              .temperature(0.0)
              .maxTokens(newTokens)
              .ignoreEos(true)
              .build()
              .withDefaults(SamplingDefaults.NONE);
      int id = 0;
      for (int round = -2; round < rounds; round++) { // two rounds of warm-up
        long wallNanos = 0, decodeNanos = 0, forwardNanos = 0;
        int decodeSteps = 0;
        for (int q = 0; q < perRound; q++) {
          long start = System.nanoTime();
          for (int k = 0; k < streams; k++) {
            int[] prompt = r.ints(context, 0, c.vocabSize()).toArray();
            Rejection refused =
                engine.add(
                    new EngineRequest(
                        "r" + id++,
                        prompt,
                        p,
                        samplers.prepare(p),
                        0,
                        null,
                        0,
                        null,
                        0,
                        false,
                        false,
                        null,
                        null));
            if (refused != null) throw new IllegalStateException(refused.getMessage());
          }
          engine.step(); // the prompts and their first tokens
          while (engine.hasWork()) {
            runner.nanos = 0;
            long t0 = System.nanoTime();
            Engine.Step s = engine.step();
            long dt = System.nanoTime() - t0;
            if (!s.failures().isEmpty())
              throw new IllegalStateException(s.failures().get(0).rejection().getMessage());
            for (RequestUpdate u : s.updates()) u.hashCode();
            decodeNanos += dt;
            forwardNanos += runner.nanos;
            decodeSteps++;
          }
          wallNanos += System.nanoTime() - start;
        }
        if (round < 0) continue;
        System.out.printf(
            Locale.ROOT,
            "round %d: %.1f tok/s with the prefill (%d streams); decode %.1f tok/s, per step %.3f"
                + " ms = forward %.3f + rest %.3f%n",
            round,
            (double) perRound * streams * newTokens * 1e9 / wallNanos,
            streams,
            decodeSteps * streams * 1e9 / decodeNanos,
            decodeNanos / 1e6 / decodeSteps,
            forwardNanos / 1e6 / decodeSteps,
            (decodeNanos - forwardNanos) / 1e6 / decodeSteps);
      }
    }
  }

  /** The runner, timing its forward passes. */
  private static final class TimedRunner implements ModelRunner {
    private final ModelRunner inner;
    long nanos;

    TimedRunner(ModelRunner inner) {
      this.inner = inner;
    }

    @Override
    public ModelConfig config() {
      return inner.config();
    }

    @Override
    public int blockSize() {
      return inner.blockSize();
    }

    @Override
    public int numBlocks() {
      return inner.numBlocks();
    }

    @Override
    public List<float[][]> forward(List<SequenceChunk> batch) {
      long t0 = System.nanoTime();
      try {
        return inner.forward(batch);
      } finally {
        nanos += System.nanoTime() - t0;
      }
    }

    @Override
    public void copyBlock(int src, int dst) {
      inner.copyBlock(src, dst);
    }

    @Override
    public void close() {
      inner.close();
    }
  }
}
