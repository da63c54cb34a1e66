package dev.troupe.engine.cpu;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * Vector API loops of {@link Attention}'s decode items over the cache's block layout (only touched
 * when {@link VectorSupport#AVAILABLE}; used when the block size is a multiple of {@link
 * #lanes()}): a block's keys of one KV head are stored transposed, {@code [d][bs]}, so one vector
 * holds a key element of {@link #lanes()} positions and the scores of a block come from {@code d}
 * fused multiply-adds with the query element broadcast, no horizontal sums; its values {@code
 * [bs][d]}, one vector per {@link #lanes()} elements of a position's value.
 */
final class AttentionVec {
  private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;
  private static final int L = S.length();

  private AttentionVec() {}

  static int lanes() {
    return L;
  }

  /**
   * {@code scores[at + p] = scale · Σ_i q[i] k[keys + i·bs + p]} for the {@code bs} positions p of
   * one block; {@code bs} is a multiple of {@link #lanes()}. Four partial sums over i (i mod 4)
   * keep four independent multiply-add chains in flight.
   */
  static void scores(
      float[] qkv, int q, float[] k, int keys, int d, int bs, float scale, float[] scores, int at) {
    for (int c = 0; c < bs; c += L) {
      FloatVector a0 = FloatVector.zero(S), a1 = a0, a2 = a0, a3 = a0;
      int i = 0, col = keys + c;
      for (; i + 3 < d; i += 4, col += 4 * bs) {
        a0 = FloatVector.fromArray(S, k, col).fma(FloatVector.broadcast(S, qkv[q + i]), a0);
        a1 =
            FloatVector.fromArray(S, k, col + bs).fma(FloatVector.broadcast(S, qkv[q + i + 1]), a1);
        a2 =
            FloatVector.fromArray(S, k, col + 2 * bs)
                .fma(FloatVector.broadcast(S, qkv[q + i + 2]), a2);
        a3 =
            FloatVector.fromArray(S, k, col + 3 * bs)
                .fma(FloatVector.broadcast(S, qkv[q + i + 3]), a3);
      }
      for (; i < d; i++, col += bs)
        a0 = FloatVector.fromArray(S, k, col).fma(FloatVector.broadcast(S, qkv[q + i]), a0);
      a0.add(a1).add(a2.add(a3)).mul(scale).intoArray(scores, at + c);
    }
  }

  /**
   * {@code head[h0 + i] = inv · Σ_j p[at + j] v[rows[j] + i]} over {@code n} positions whose value
   * rows start at {@code rows[0 .. n)}. Four partial sums over j (j mod 4). One plain loop per
   * {@link #lanes()} elements: C2 keeps its vectors in registers (a loop nest over blocks boxed
   * them, measured 8× slower).
   */
  static void values(
      float[] p, int at, int n, float[] v, int[] rows, int d, float inv, float[] head, int h0) {
    int c = 0;
    for (; c + L <= d; c += L) {
      FloatVector a0 = FloatVector.zero(S), a1 = a0, a2 = a0, a3 = a0;
      int j = 0;
      for (; j + 3 < n; j += 4) {
        a0 = FloatVector.fromArray(S, v, rows[j] + c).fma(FloatVector.broadcast(S, p[at + j]), a0);
        a1 =
            FloatVector.fromArray(S, v, rows[j + 1] + c)
                .fma(FloatVector.broadcast(S, p[at + j + 1]), a1);
        a2 =
            FloatVector.fromArray(S, v, rows[j + 2] + c)
                .fma(FloatVector.broadcast(S, p[at + j + 2]), a2);
        a3 =
            FloatVector.fromArray(S, v, rows[j + 3] + c)
                .fma(FloatVector.broadcast(S, p[at + j + 3]), a3);
      }
      for (; j < n; j++)
        a0 = FloatVector.fromArray(S, v, rows[j] + c).fma(FloatVector.broadcast(S, p[at + j]), a0);
      a0.add(a1).add(a2.add(a3)).mul(inv).intoArray(head, h0 + c);
    }
    for (; c < d; c++) {
      float sum = 0;
      for (int j = 0; j < n; j++) sum += p[at + j] * v[rows[j] + c];
      head[h0 + c] = sum * inv;
    }
  }
}
