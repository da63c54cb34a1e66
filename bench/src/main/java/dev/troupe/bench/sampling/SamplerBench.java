package dev.troupe.bench.sampling;

import dev.troupe.engine.sampling.EosTokens;
import dev.troupe.engine.sampling.LogitsProcessorRegistry;
import dev.troupe.engine.sampling.Sampler;
import dev.troupe.engine.sampling.SamplerFactory;
import dev.troupe.protocol.cluster.SamplingParams;
import java.util.Random;
import java.util.Set;

/**
 * Cost of one sampling step over a Qwen-sized vocabulary (151,936 logits) for the common parameter
 * mixes. Run: {@code java -cp ... dev.troupe.bench.sampling.SamplerBench [steps]}. Prints
 * thread-CPU microseconds per step (median of 5 rounds; CPU time, so a busy machine skews it less
 * than wall time); results go in docs/benchmarks.md.
 */
public final class SamplerBench {

  private static final int VOCAB = 151_936;

  private SamplerBench() {}

  public static void main(String[] args) {
    int steps = args.length > 0 ? Integer.parseInt(args[0]) : 200;
    Random r = new Random(1);
    float[][] peaked = rows(r, 8, 3.0);
    float[][] flat = rows(r, 8, 0.05);
    SamplerFactory factory =
        new SamplerFactory(
            VOCAB, null, new EosTokens(151_645, Set.of()), LogitsProcessorRegistry.none());
    run(factory, "greedy", params(0.0, 1.0, 0, 0, null, 1.0, 0), peaked, steps);
    run(
        factory,
        "temperature 1 (full vocabulary)",
        params(1.0, 1.0, 0, 0, null, 1.0, 0),
        peaked,
        steps);
    run(factory, "top_k 50", params(0.8, 1.0, 50, 0, null, 1.0, 0), peaked, steps);
    run(factory, "top_p 0.9 (peaked)", params(0.8, 0.9, 0, 0, null, 1.0, 0), peaked, steps);
    run(factory, "top_p 0.9 (flat: full sort)", params(1.0, 0.9, 0, 0, null, 1.0, 0), flat, steps);
    run(
        factory,
        "top_k 20 + top_p 0.8 + min_p 0.05",
        params(0.7, 0.8, 20, 0.05, null, 1.0, 0),
        peaked,
        steps);
    run(factory, "logprobs 20 + sampling", params(1.0, 1.0, 0, 0, 20, 1.0, 0), peaked, steps);
    run(
        factory,
        "penalties, 2k-token history",
        params(1.0, 1.0, 0, 0, null, 1.1, 0.5),
        peaked,
        steps);
  }

  private static SamplingParams params(
      double t, double topP, int topK, double minP, Integer logprobs, double rep, double freq) {
    return SamplingParams.builder()
        .temperature(t)
        .topP(topP)
        .topK(topK)
        .minP(minP)
        .presencePenalty(freq)
        .frequencyPenalty(freq)
        .repetitionPenalty(rep)
        .seed(7L)
        .maxTokens(1_000_000)
        .logprobs(logprobs)
        .build();
  }

  private static float[][] rows(Random r, int n, double scale) {
    float[][] out = new float[n][VOCAB];
    for (float[] row : out)
      for (int i = 0; i < VOCAB; i++) row[i] = (float) (r.nextGaussian() * scale);
    return out;
  }

  private static void run(
      SamplerFactory f, String name, SamplingParams p, float[][] rows, int steps) {
    int[] prompt = new Random(2).ints(2000, 0, VOCAB).toArray();
    long[] rounds = new long[5];
    for (int warm = 0; warm < 2; warm++) once(f, p, prompt, rows, steps);
    for (int i = 0; i < rounds.length; i++) rounds[i] = once(f, p, prompt, rows, steps);
    java.util.Arrays.sort(rounds);
    System.out.printf("%-40s %8.1f us CPU/step%n", name, rounds[2] / 1000.0 / steps);
  }

  private static long once(
      SamplerFactory f, SamplingParams p, int[] prompt, float[][] rows, int steps) {
    Sampler s = f.create(p, prompt, 0);
    for (int i = 0; i < 2000 && p.repetitionPenalty() != 1.0; i++) s.accept(prompt[i]);
    var mx = java.lang.management.ManagementFactory.getThreadMXBean();
    long t0 = mx.getCurrentThreadCpuTime();
    int sink = 0;
    for (int i = 0; i < steps; i++) sink += s.next(rows[i % rows.length]).token();
    long dt = mx.getCurrentThreadCpuTime() - t0;
    if (sink == 42) System.out.print("");
    return dt;
  }
}
