package dev.troupe.engine.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.engine.ModelRunner.SequenceChunk;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * {@link Attention} against attention computed in double precision from the keys and values as
 * given (not as cached): decode items (one token per sequence, {@link Attention#perToken}, split
 * over 1 and 3 members) and prefill chunks ({@link Attention#chunk}, BLAS), over shuffled block
 * tables, partial first and last blocks, sliding windows and grouped heads. Block sizes that are a
 * multiple of the vector width run the {@link AttentionVec} loops, the others the scalar ones.
 */
class AttentionTest {
  /** Float sums over a few hundred positions against double: relative to the output's scale. */
  private static final double TOL = 2e-5;

  @ParameterizedTest(name = "bs {0}, heads {1}/{2}, d {3}, window {4}")
  @CsvSource({
    "16, 8, 4, 64, 0",
    "32, 4, 1, 64, 0",
    "16, 6, 2, 48, 0",
    "16, 8, 4, 64, 37",
    "4, 4, 2, 32, 0",
    "24, 4, 4, 16, 0",
    "8, 2, 1, 64, 21",
  })
  void decodeAndPrefillMatchDoublePrecision(int bs, int nH, int nKv, int d, int window) {
    int kvDim = nKv * d, qDim = nH * d, stride = qDim + 2 * kvDim;
    int[] lengths = {1, bs - 1, bs, bs + 1, 3 * bs + 5, 150};
    int blocksEach = (150 + bs) / bs + 1, numBlocks = lengths.length * blocksEach + 3;
    Attention attention = new Attention(nH, nKv, d, bs, window);
    SplittableRandom r = new SplittableRandom(bs * 31L + nH + d + window);
    // shuffled blocks: sequence i owns a scattered set of them
    int[] perm = new int[numBlocks];
    for (int i = 0; i < numBlocks; i++) perm[i] = i;
    for (int i = numBlocks - 1; i > 0; i--) {
      int j = r.nextInt(i + 1), x = perm[i];
      perm[i] = perm[j];
      perm[j] = x;
    }
    float[] kc = new float[numBlocks * bs * kvDim], vc = new float[kc.length];
    for (int i = 0; i < kc.length; i++) { // stale entries: attention must not see them
      kc[i] = 1e3f;
      vc[i] = 1e3f;
    }
    List<float[][]> qs = new ArrayList<>(), ks = new ArrayList<>(), vs = new ArrayList<>();
    List<int[]> tables = new ArrayList<>();
    for (int s = 0; s < lengths.length; s++) {
      int n = lengths[s];
      int[] table = new int[blocksEach];
      for (int b = 0; b < blocksEach; b++) table[b] = perm[s * blocksEach + b];
      tables.add(table);
      float[][] q = gaussian(r, n, qDim), k = gaussian(r, n, kvDim), v = gaussian(r, n, kvDim);
      qs.add(q);
      ks.add(k);
      vs.add(v);
      float[] row = new float[stride];
      for (int p = 0; p < n; p++) {
        System.arraycopy(k[p], 0, row, qDim, kvDim);
        System.arraycopy(v[p], 0, row, qDim + kvDim, kvDim);
        attention.store(row, qDim, qDim + kvDim, kc, vc, table[p / bs] * bs + p % bs);
      }
    }

    // decode: each sequence's last position as one token
    List<SequenceChunk> decode = new ArrayList<>();
    for (int s = 0; s < lengths.length; s++)
      decode.add(new SequenceChunk(new int[] {1}, lengths[s] - 1, tables.get(s), false));
    Step step = Step.of(decode, 2, bs, numBlocks, id -> null, false);
    float[] qkv = new float[lengths.length * stride];
    for (int s = 0; s < lengths.length; s++)
      System.arraycopy(qs.get(s)[lengths[s] - 1], 0, qkv, s * stride, qDim);
    for (int members : new int[] {1, 3}) {
      float[] out = new float[lengths.length * qDim];
      Attention.Plan plan = attention.plan(step);
      assertEquals(0, plan.blasChunks.length);
      for (int m = 0; m < members; m++)
        attention.perToken(
            m, members, plan, step, qkv, stride, kc, vc, out, qDim, 0, new Attention.Scratch());
      for (int s = 0; s < lengths.length; s++) {
        double[] want =
            reference(qs.get(s), ks.get(s), vs.get(s), lengths[s] - 1, nH, nKv, d, window);
        assertClose(want, out, s * qDim, "decode, sequence " + s + ", " + members + " members");
      }
    }

    // prefill: the longest sequence's last 140 positions as one chunk (BLAS) after the rest, in
    // blocks of queries (the last one partial)
    int s = lengths.length - 1, n = lengths[s], nq = 140;
    int[] tokens = new int[nq];
    java.util.Arrays.fill(tokens, 1);
    Step chunk =
        Step.of(
            List.of(new SequenceChunk(tokens, n - nq, tables.get(s), false)),
            2,
            bs,
            numBlocks,
            id -> null,
            false);
    float[] cq = new float[nq * stride], out = new float[nq * qDim];
    for (int i = 0; i < nq; i++) System.arraycopy(qs.get(s)[n - nq + i], 0, cq, i * stride, qDim);
    Attention.Plan plan = attention.plan(chunk);
    assertEquals(1, plan.blasChunks.length);
    try (Blas blas = new Blas()) {
      Attention.ChunkBuffers buf = new Attention.ChunkBuffers();
      int blocks = (nq + Attention.QUERY_BLOCK - 1) / Attention.QUERY_BLOCK;
      assertTrue(blocks > 1, "the chunk spans blocks of queries");
      assertEquals(nKv * blocks, attention.chunkUnits(plan));
      for (int u = attention.chunkUnits(plan) - 1; u >= 0; u--) // any order: disjoint heads
      attention.chunk(plan, u, chunk, cq, stride, kc, vc, out, qDim, 0, blas, buf);
    }
    for (int i = 0; i < nq; i++) {
      double[] want = reference(qs.get(s), ks.get(s), vs.get(s), n - nq + i, nH, nKv, d, window);
      assertClose(want, out, i * qDim, "prefill row " + i);
    }
  }

  /** Softmax attention of query position {@code p} over positions {@code 0..p} (or the window). */
  private static double[] reference(
      float[][] q, float[][] k, float[][] v, int p, int nH, int nKv, int d, int window) {
    double[] out = new double[nH * d];
    int lo = window > 0 ? Math.max(0, p + 1 - window) : 0;
    for (int h = 0; h < nH; h++) {
      int g = h / (nH / nKv);
      double[] w = new double[p + 1];
      double max = Double.NEGATIVE_INFINITY, sum = 0;
      for (int j = lo; j <= p; j++) {
        double dot = 0;
        for (int i = 0; i < d; i++) dot += (double) q[p][h * d + i] * k[j][g * d + i];
        w[j] = dot / Math.sqrt(d);
        max = Math.max(max, w[j]);
      }
      for (int j = lo; j <= p; j++) sum += w[j] = Math.exp(w[j] - max);
      for (int j = lo; j <= p; j++)
        for (int i = 0; i < d; i++) out[h * d + i] += w[j] / sum * v[j][g * d + i];
    }
    return out;
  }

  private static float[][] gaussian(SplittableRandom r, int rows, int cols) {
    float[][] a = new float[rows][cols];
    for (float[] row : a) for (int i = 0; i < cols; i++) row[i] = (float) (2 * r.nextDouble() - 1);
    return a;
  }

  private static void assertClose(double[] want, float[] got, int at, String what) {
    double worst = 0;
    for (int i = 0; i < want.length; i++) worst = Math.max(worst, Math.abs(want[i] - got[at + i]));
    assertTrue(worst < TOL, what + ": max difference " + worst);
  }
}
