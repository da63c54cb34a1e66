package dev.troupe.engine.cpu;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * Products {@code y = x · Wᵀ} with BF16 weights widened to FP32 in registers and FP32 accumulation,
 * for 1–64 activation rows (Java Vector API). A BF16 value is the upper half of an FP32 one, so the
 * halves of an int are {@code v << 16} and {@code v & 0xffff0000}: already FP32 bit patterns, no
 * lane shuffles.
 *
 * <p>Weights are the checkpoint's bytes read as little-endian {@code int}s: each int packs the
 * elements {@code 2k} (low half) and {@code 2k + 1} (high half) of a row, {@code half = ⌈in/2⌉}
 * ints per row, in {@link Matrix#tiled}'s layout (groups of 4 rows interleaved by vector, so a
 * block reads one contiguous run). The activations come {@link Activations#put packed} to match:
 * per row the even elements, then the odd ones, so lane k of {@code lo} meets x[2k] and of {@code
 * hi} meets x[2k + 1]. Blocks of 4 weight rows × 4 activation rows (16 accumulators, 8 widened
 * weight vectors: AVX-512's 32 registers) read each weight row once for all activation rows; every
 * row sums its products in the same order whatever the batch and whichever path (block or single
 * row), so a row's result does not depend on the others.
 *
 * <p>Written for C2: the widening is a constant of the class (one class per dtype rather than a
 * flag) and vectors never leave a method un-inlined (reductions happen in place), because a vector
 * that C2 cannot keep in registers is boxed on the heap, which measured 40% of the kernel's time.
 */
final class Bf16Kernel {
  private static final VectorSpecies<Integer> I = IntVector.SPECIES_PREFERRED;
  private static final VectorSpecies<Float> F = FloatVector.SPECIES_PREFERRED;
  private static final int L = I.length();

  /** Ints per vector: {@link Matrix#CHUNK}. */
  static final int LANES = L;

  private Bf16Kernel() {}

  /**
   * {@code y[b·yStride + yOff + o] (+)= Σ_i x[b, i] · W[o, i]} for {@code o ∈ [o0, o1)} and all
   * {@code rows} rows; {@code w} holds rows {@code [wRow0, …)} of W (tiled, {@code half} ints each,
   * {@code wRow0} a group start), x rows are packed, {@code 2·half} floats apart.
   */
  static void range(
      float[] x,
      int rows,
      int half,
      int[] w,
      int wRow0,
      float[] y,
      int yStride,
      int yOff,
      int o0,
      int o1,
      boolean add) {
    int o = o0;
    for (; o < o1 && ((o - wRow0) & 3) != 0; o++)
      single(x, rows, half, w, o - wRow0, y, yStride, yOff + o, add);
    int full = o + (o1 - o) / 4 * 4;
    if ((long) rows * half * 8 <= X_IN_L1)
      groups(x, 0, rows, half, w, wRow0, y, yStride, yOff, o, full, add);
    else
      // the activation rows outgrow L1: a chunk of weight rows that stays in L2 meets the
      // activations 4 rows at a time, so each 4-row block of x is read from L1, the chunk's weights
      // from L2, and the weights from memory still once (the small model's step products at 32
      // rows: 32 -> 25-28 ms, StepProductsBench)
      for (int c = o; c < full; c += chunkRows(half)) {
        int c1 = Math.min(full, c + chunkRows(half));
        for (int b = 0; b < rows; b += 4)
          groups(x, b, Math.min(rows, b + 4), half, w, wRow0, y, yStride, yOff, c, c1, add);
      }
    for (o = full; o < o1; o++) single(x, rows, half, w, o - wRow0, y, yStride, yOff + o, add);
  }

  /**
   * Bytes of activation rows that stay in a core's L1 data cache (48 KB on recent x86) with room.
   */
  private static final long X_IN_L1 = 32 << 10;

  /** Weight rows per chunk: about 256 KB, a part of a core's L2 (1–2 MB on recent x86). */
  private static int chunkRows(int half) {
    return Math.max(4, (256 << 10) / (half * 4) / 4 * 4);
  }

  /**
   * Groups of 4 weight rows {@code [o, o1)} (whole groups) for activation rows {@code [b0, b1)}.
   */
  private static void groups(
      float[] x,
      int b0,
      int b1,
      int half,
      int[] w,
      int wRow0,
      float[] y,
      int yStride,
      int yOff,
      int o,
      int o1,
      boolean add) {
    for (; o < o1; o += 4) {
      int g = (o - wRow0) * half; // the group's first int
      int b = b0;
      for (; b + 3 < b1; b += 4) block4x4(x, b, half, w, g, y, yStride, yOff + o, add);
      for (; b < b1; b++) block4x1(x, b, half, w, g, y, yStride, yOff + o, add);
    }
  }

  /** Row {@code r} of the part alone, for every activation row: the order of the blocks. */
  private static void single(
      float[] x, int rows, int half, int[] w, int r, float[] y, int yStride, int yo, boolean add) {
    int g = (r & ~3) * half, j = r & 3, bound = I.loopBound(half);
    int tail = g + 4 * bound + j * (half - bound);
    for (int b = 0; b < rows; b++) {
      int xo = b * 2 * half;
      FloatVector a = FloatVector.zero(F);
      int k = 0;
      for (; k < bound; k += L) {
        IntVector v = IntVector.fromArray(I, w, g + 4 * k + j * L);
        a =
            hi(v)
                .fma(
                    FloatVector.fromArray(F, x, xo + half + k),
                    lo(v).fma(FloatVector.fromArray(F, x, xo + k), a));
      }
      put(y, b * yStride + yo, add, a.reduceLanes(VectorOperators.ADD), x, xo, half, w, tail, k);
    }
  }

  /** Element {@code 2k} of each lane's pair, as FP32. */
  static FloatVector lo(IntVector v) {
    return v.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
  }

  /** Element {@code 2k + 1} of each lane's pair, as FP32. */
  static FloatVector hi(IntVector v) {
    return v.and(0xffff0000).reinterpretAsFloats();
  }

  private static void block4x4(
      float[] x, int b, int half, int[] w, int g, float[] y, int yStride, int yo, boolean add) {
    int xs = 2 * half, x0 = b * xs, x1 = x0 + xs, x2 = x1 + xs, x3 = x2 + xs;
    FloatVector a00 = FloatVector.zero(F), a01 = a00, a02 = a00, a03 = a00;
    FloatVector a10 = a00, a11 = a00, a12 = a00, a13 = a00;
    FloatVector a20 = a00, a21 = a00, a22 = a00, a23 = a00;
    FloatVector a30 = a00, a31 = a00, a32 = a00, a33 = a00;
    int bound = I.loopBound(half), k = 0;
    for (; k < bound; k += L) {
      int at = g + 4 * k;
      IntVector v0 = IntVector.fromArray(I, w, at), v1 = IntVector.fromArray(I, w, at + L);
      IntVector v2 = IntVector.fromArray(I, w, at + 2 * L);
      IntVector v3 = IntVector.fromArray(I, w, at + 3 * L);
      FloatVector l0 = lo(v0), l1 = lo(v1), l2 = lo(v2), l3 = lo(v3);
      FloatVector h0 = hi(v0), h1 = hi(v1), h2 = hi(v2), h3 = hi(v3);
      FloatVector e = FloatVector.fromArray(F, x, x0 + k);
      FloatVector d = FloatVector.fromArray(F, x, x0 + half + k);
      a00 = h0.fma(d, l0.fma(e, a00));
      a01 = h1.fma(d, l1.fma(e, a01));
      a02 = h2.fma(d, l2.fma(e, a02));
      a03 = h3.fma(d, l3.fma(e, a03));
      e = FloatVector.fromArray(F, x, x1 + k);
      d = FloatVector.fromArray(F, x, x1 + half + k);
      a10 = h0.fma(d, l0.fma(e, a10));
      a11 = h1.fma(d, l1.fma(e, a11));
      a12 = h2.fma(d, l2.fma(e, a12));
      a13 = h3.fma(d, l3.fma(e, a13));
      e = FloatVector.fromArray(F, x, x2 + k);
      d = FloatVector.fromArray(F, x, x2 + half + k);
      a20 = h0.fma(d, l0.fma(e, a20));
      a21 = h1.fma(d, l1.fma(e, a21));
      a22 = h2.fma(d, l2.fma(e, a22));
      a23 = h3.fma(d, l3.fma(e, a23));
      e = FloatVector.fromArray(F, x, x3 + k);
      d = FloatVector.fromArray(F, x, x3 + half + k);
      a30 = h0.fma(d, l0.fma(e, a30));
      a31 = h1.fma(d, l1.fma(e, a31));
      a32 = h2.fma(d, l2.fma(e, a32));
      a33 = h3.fma(d, l3.fma(e, a33));
    }
    // each row's tail after the group's chunks
    int t = half - bound, w0 = g + 4 * bound, w1 = w0 + t, w2 = w1 + t, w3 = w2 + t;
    int y0 = b * yStride + yo, y1 = y0 + yStride, y2 = y1 + yStride, y3 = y2 + yStride;
    put(y, y0, add, a00.reduceLanes(VectorOperators.ADD), x, x0, half, w, w0, k);
    put(y, y0 + 1, add, a01.reduceLanes(VectorOperators.ADD), x, x0, half, w, w1, k);
    put(y, y0 + 2, add, a02.reduceLanes(VectorOperators.ADD), x, x0, half, w, w2, k);
    put(y, y0 + 3, add, a03.reduceLanes(VectorOperators.ADD), x, x0, half, w, w3, k);
    put(y, y1, add, a10.reduceLanes(VectorOperators.ADD), x, x1, half, w, w0, k);
    put(y, y1 + 1, add, a11.reduceLanes(VectorOperators.ADD), x, x1, half, w, w1, k);
    put(y, y1 + 2, add, a12.reduceLanes(VectorOperators.ADD), x, x1, half, w, w2, k);
    put(y, y1 + 3, add, a13.reduceLanes(VectorOperators.ADD), x, x1, half, w, w3, k);
    put(y, y2, add, a20.reduceLanes(VectorOperators.ADD), x, x2, half, w, w0, k);
    put(y, y2 + 1, add, a21.reduceLanes(VectorOperators.ADD), x, x2, half, w, w1, k);
    put(y, y2 + 2, add, a22.reduceLanes(VectorOperators.ADD), x, x2, half, w, w2, k);
    put(y, y2 + 3, add, a23.reduceLanes(VectorOperators.ADD), x, x2, half, w, w3, k);
    put(y, y3, add, a30.reduceLanes(VectorOperators.ADD), x, x3, half, w, w0, k);
    put(y, y3 + 1, add, a31.reduceLanes(VectorOperators.ADD), x, x3, half, w, w1, k);
    put(y, y3 + 2, add, a32.reduceLanes(VectorOperators.ADD), x, x3, half, w, w2, k);
    put(y, y3 + 3, add, a33.reduceLanes(VectorOperators.ADD), x, x3, half, w, w3, k);
  }

  private static void block4x1(
      float[] x, int b, int half, int[] w, int g, float[] y, int yStride, int yo, boolean add) {
    int x0 = b * 2 * half;
    // the same accumulation order as block4x4 (one activation row is memory-bound: the FMA
    // chains' latency does not show)
    FloatVector a0 = FloatVector.zero(F), a1 = a0, a2 = a0, a3 = a0;
    int bound = I.loopBound(half), k = 0;
    for (; k < bound; k += L) {
      FloatVector e = FloatVector.fromArray(F, x, x0 + k);
      FloatVector d = FloatVector.fromArray(F, x, x0 + half + k);
      int at = g + 4 * k;
      IntVector v0 = IntVector.fromArray(I, w, at), v1 = IntVector.fromArray(I, w, at + L);
      IntVector v2 = IntVector.fromArray(I, w, at + 2 * L);
      IntVector v3 = IntVector.fromArray(I, w, at + 3 * L);
      a0 = hi(v0).fma(d, lo(v0).fma(e, a0));
      a1 = hi(v1).fma(d, lo(v1).fma(e, a1));
      a2 = hi(v2).fma(d, lo(v2).fma(e, a2));
      a3 = hi(v3).fma(d, lo(v3).fma(e, a3));
    }
    int t = half - bound, w0 = g + 4 * bound, w1 = w0 + t, w2 = w1 + t, w3 = w2 + t;
    int y0 = b * yStride + yo;
    put(y, y0, add, a0.reduceLanes(VectorOperators.ADD), x, x0, half, w, w0, k);
    put(y, y0 + 1, add, a1.reduceLanes(VectorOperators.ADD), x, x0, half, w, w1, k);
    put(y, y0 + 2, add, a2.reduceLanes(VectorOperators.ADD), x, x0, half, w, w2, k);
    put(y, y0 + 3, add, a3.reduceLanes(VectorOperators.ADD), x, x0, half, w, w3, k);
  }

  /**
   * A reduced {@code sum} plus the scalar tail {@code [from, half)} of a row whose tail ints start
   * at {@code w[tail]}, stored or added.
   */
  private static void put(
      float[] y,
      int yi,
      boolean add,
      float sum,
      float[] x,
      int xo,
      int half,
      int[] w,
      int tail,
      int from) {
    for (int k = from; k < half; k++) {
      int v = w[tail + k - from];
      sum += Scalar16.lo(false, v) * x[xo + k] + Scalar16.hi(false, v) * x[xo + half + k];
    }
    y[yi] = add ? y[yi] + sum : sum;
  }
}
