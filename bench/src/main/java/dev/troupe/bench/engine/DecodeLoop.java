package dev.troupe.bench.engine;

import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.ModelRunner;
import dev.troupe.engine.ModelRunner.SequenceChunk;
import dev.troupe.engine.cpu.CpuModelRunner;
import dev.troupe.engine.model.DType;
import dev.troupe.engine.model.RandomWeights;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * The engine's decode step in a warm loop: {@code batch} sequences with a prompt of {@code context}
 * tokens, then forward calls of one token each for {@code rounds} rounds of {@code seconds}
 * (positions cycle through {@code [context, context + 128)}), printing the best round's time per
 * step. Unlike {@link EngineBench}'s 24 timed steps, long enough for the JIT and the machine to
 * settle. Args: {@code small|medium batch [seconds=0.5] [context=16] [rounds=12]}; run with {@code
 * --add-modules jdk.incubator.vector}.
 */
public final class DecodeLoop {
  private DecodeLoop() {}

  public static void main(String[] a) {
    EngineBench.Size size = a[0].equals("medium") ? EngineBench.MEDIUM : EngineBench.SMALL;
    int batch = Integer.parseInt(a[1]);
    double seconds = a.length > 2 ? Double.parseDouble(a[2]) : 0.5;
    int context = a.length > 3 ? Integer.parseInt(a[3]) : 16;
    int rounds = a.length > 4 ? Integer.parseInt(a[4]) : 12;
    ModelConfig c = size.config();
    int bs = EngineBench.BLOCK, blocks = (context + 128 + bs - 1) / bs;
    try (ModelRunner m =
        CpuModelRunner.load(
            c, new RandomWeights(c, 7L, 0.02, "bench model"), DType.BF16, batch * blocks, bs)) {
      SplittableRandom r = new SplittableRandom(1);
      List<int[]> tables = new ArrayList<>();
      List<SequenceChunk> prompts = new ArrayList<>();
      for (int b = 0; b < batch; b++) {
        int[] t = new int[blocks];
        for (int i = 0; i < blocks; i++) t[i] = b * blocks + i;
        tables.add(t);
        prompts.add(
            SequenceChunk.prompt(r.ints(context, 0, EngineBench.VOCAB).toArray(), 0, t, false));
      }
      m.forward(prompts);
      double best = Double.MAX_VALUE;
      int pos = context;
      for (int round = 0; round < rounds; round++) {
        long t0 = System.nanoTime();
        int steps = 0;
        while (System.nanoTime() - t0 < seconds * 1e9) {
          List<SequenceChunk> step = new ArrayList<>(batch);
          for (int[] t : tables)
            step.add(new SequenceChunk(new int[] {r.nextInt(EngineBench.VOCAB)}, pos, t, false));
          m.forward(step);
          steps++;
          pos = context + (pos - context + 1) % 128;
        }
        best = Math.min(best, (System.nanoTime() - t0) / 1e6 / steps);
      }
      System.out.printf(
          Locale.ROOT,
          "%s, batch %d, context %d-%d: best of %d rounds %.2f ms per step = %.1f tok/s%n",
          size.name(),
          batch,
          context,
          context + 127,
          rounds,
          best,
          batch * 1000 / best);
    }
  }
}
