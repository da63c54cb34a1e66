package dev.troupe.engine.cpu;

import dev.troupe.engine.ModelRunner.SequenceChunk;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * Decode attention of one layer, alone: {@code batch} sequences of one new token each at positions
 * {@code context .. context + 127} (cycling), over a cache of random keys and values, run by one
 * thread ({@link Attention#perToken} with all items), heads as the bench models (8 query heads of
 * 64, 4 KV heads; {@code medium}: 16 and 8), 16-position blocks. Prints the best round's time per
 * call and per attended position. Not a test (surefire runs {@code *Test} only): run on the test
 * classpath with {@code --add-modules jdk.incubator.vector}; args {@code small|medium [batch=1]
 * [context=256] [rounds=20]}. Results in docs/benchmarks.md.
 */
public final class AttentionBench {
  private AttentionBench() {}

  public static void main(String[] args) {
    boolean medium = args.length > 0 && args[0].equals("medium");
    int batch = args.length > 1 ? Integer.parseInt(args[1]) : 1;
    int context = args.length > 2 ? Integer.parseInt(args[2]) : 256;
    int rounds = args.length > 3 ? Integer.parseInt(args[3]) : 20;
    int nH = medium ? 16 : 8, nKv = nH / 2, d = 64, bs = 16, kvDim = nKv * d;
    int blocks = (context + 128 + bs - 1) / bs, numBlocks = batch * blocks;
    Attention attention = new Attention(nH, nKv, d, bs, 0);
    SplittableRandom r = new SplittableRandom(1);
    float[] k = new float[numBlocks * bs * kvDim], v = new float[k.length];
    for (int i = 0; i < k.length; i++) {
      k[i] = (float) r.nextGaussian();
      v[i] = (float) r.nextGaussian();
    }
    int stride = nH * d + 2 * kvDim;
    float[] qkv = new float[batch * stride], out = new float[batch * nH * d];
    for (int i = 0; i < qkv.length; i++) qkv[i] = (float) r.nextGaussian();
    Attention.Scratch scratch = new Attention.Scratch();
    double best = Double.MAX_VALUE;
    long positions = 0;
    for (int round = 0; round < rounds; round++) {
      long t0 = System.nanoTime(), calls = 0;
      positions = 0;
      for (int pos = context; pos < context + 128; pos++, calls++) {
        List<SequenceChunk> chunks = new ArrayList<>();
        for (int b = 0; b < batch; b++) {
          int[] table = new int[blocks];
          for (int i = 0; i < blocks; i++) table[i] = b * blocks + i;
          chunks.add(new SequenceChunk(new int[] {1}, pos, table, false));
        }
        Step s = Step.of(chunks, 2, bs, numBlocks, id -> null, false);
        Attention.Plan plan = attention.plan(s);
        attention.perToken(0, 1, plan, s, qkv, stride, k, v, out, nH * d, 0, scratch);
        positions += (long) batch * (pos + 1);
      }
      best = Math.min(best, (System.nanoTime() - t0) / 1e3 / calls);
    }
    System.out.printf(
        Locale.ROOT,
        "%s attention, batch %d, context %d-%d, 1 thread: best of %d rounds %.1f us per layer"
            + " = %.2f ns per attended position%n",
        medium ? "medium" : "small",
        batch,
        context,
        context + 127,
        rounds,
        best,
        best * 1e3 * 128 / positions);
  }
}
