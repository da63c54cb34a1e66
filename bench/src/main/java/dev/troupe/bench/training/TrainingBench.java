package dev.troupe.bench.training;

import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.ModelRunner;
import dev.troupe.engine.cpu.CpuModelRunner;
import dev.troupe.engine.model.RandomWeights;
import dev.troupe.training.AdamW;
import dev.troupe.training.nd4j.LoraSpec;
import dev.troupe.training.nd4j.LoraTransformer;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import org.nd4j.linalg.api.buffer.DataType;

/**
 * Training throughput of the small benchmark model (Llama layout, hidden 512, 8 layers, 8 heads / 4
 * KV heads, intermediate 1536, Llama 3 vocabulary 128256, F32): tokens/s of one optimizer step
 * (forward over the whole row with the LM head on every position, backward, AdamW on LoRA r 8 on
 * all projections) against the serving runner's prefill of the same row (forward, last-position
 * logits) and the training forward alone.
 *
 * <p>Usage: {@code TrainingBench [rowTokens] [steps]}. Not a test: results go to docs/benchmarks.md
 * with the command and the machine's conditions.
 */
public final class TrainingBench {
  public static void main(String[] args) {
    int n = args.length > 0 ? Integer.parseInt(args[0]) : 512;
    int steps = args.length > 1 ? Integer.parseInt(args[1]) : 3;
    ModelConfig c =
        new ModelConfig(
            "LlamaForCausalLM",
            128256,
            512,
            1536,
            8,
            8,
            4,
            64,
            8192,
            1e-5,
            500_000.0,
            null,
            false,
            false,
            false,
            128000,
            List.of(128001),
            0);
    System.out.printf(
        Locale.ROOT,
        "cores=%d java=%s row=%d tokens, %d timed steps%n",
        Runtime.getRuntime().availableProcessors(),
        System.getProperty("java.version"),
        n,
        steps);
    RandomWeights w = new RandomWeights(c, 7L, 0.02, "bench model");
    SplittableRandom r = new SplittableRandom(7);
    int[] tokens = new int[n];
    int[] positions = new int[n];
    for (int i = 0; i < n; i++) {
      tokens[i] = r.nextInt(c.vocabSize());
      positions[i] = i;
    }
    int[] segments = new int[n];

    double prefill;
    try (ModelRunner runner = CpuModelRunner.load(c, w, (n + 15) / 16 + 1, 16)) {
      int[] blocks = new int[(n + 15) / 16];
      for (int i = 0; i < blocks.length; i++) blocks[i] = i;
      runner.forward(List.of(new ModelRunner.SequenceChunk(tokens, 0, blocks, false)));
      long t0 = System.nanoTime();
      for (int s = 0; s < steps; s++)
        runner.forward(List.of(new ModelRunner.SequenceChunk(tokens, 0, blocks, false)));
      prefill = n * (double) steps / ((System.nanoTime() - t0) / 1e9);
    }
    System.out.printf(
        Locale.ROOT, "serving prefill (runner, last logits): %.0f tokens/s%n", prefill);

    LoraTransformer m = new LoraTransformer(c, w, LoraSpec.DEFAULT, DataType.FLOAT);
    m.forward(tokens, positions, segments);
    long t0 = System.nanoTime();
    for (int s = 0; s < steps; s++) m.forward(tokens, positions, segments);
    double fwd = n * (double) steps / ((System.nanoTime() - t0) / 1e9);
    System.out.printf(
        Locale.ROOT, "training forward (logprobs of every position): %.0f tokens/s%n", fwd);

    AdamW opt = new AdamW(AdamW.Hyper.ART);
    double[] g = new double[n];
    for (int i = 0; i + 1 < n; i++) g[i] = -1.0 / n;
    var out = m.forwardBackward(tokens, positions, segments, lp -> g);
    opt.update(m.parameters(), out.gradients(), 1e-4, m.noDecayParameters());
    t0 = System.nanoTime();
    for (int s = 0; s < steps; s++) {
      out = m.forwardBackward(tokens, positions, segments, lp -> g);
      opt.update(m.parameters(), out.gradients(), 1e-4, m.noDecayParameters());
    }
    double train = n * (double) steps / ((System.nanoTime() - t0) / 1e9);
    System.out.printf(
        Locale.ROOT, "training step (forward + backward + AdamW, LoRA r8): %.0f tokens/s%n", train);
    System.out.printf(
        Locale.ROOT,
        "training step / serving prefill = %.2f; / training forward = %.2f%n",
        train / prefill,
        train / fwd);

    // an RL row: the first half is prompt (not trained), the second half the sampled completion
    boolean[] needed = new boolean[n];
    double[] gh = new double[n];
    for (int i = n / 2; i + 1 < n; i++) {
      needed[i] = true;
      gh[i] = -1.0 / n;
    }
    out = m.forwardBackward(tokens, positions, segments, needed, lp -> gh);
    t0 = System.nanoTime();
    for (int s = 0; s < steps; s++) {
      out = m.forwardBackward(tokens, positions, segments, needed, lp -> gh);
      opt.update(m.parameters(), out.gradients(), 1e-4, m.noDecayParameters());
    }
    double half = n * (double) steps / ((System.nanoTime() - t0) / 1e9);
    System.out.printf(
        Locale.ROOT,
        "training step, second half of the row trained: %.0f tokens/s (%.2f of prefill)%n",
        half,
        half / prefill);
  }
}
