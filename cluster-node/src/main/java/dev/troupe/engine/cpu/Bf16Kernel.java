package dev.troupe.engine.cpu;

import java.util.Arrays;
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
 * ints per row, in {@link Matrix#tiled}'s k-major layout: per pair {@code k}, a group's {@link
 * Matrix#GROUP} rows side by side, four vectors. The activations come {@link Activations#put
 * packed} (per row the even elements, then the odd ones), and their pair {@code k} is broadcast:
 * lane {@code j} of a vector accumulates output row {@code j}, so no output needs a horizontal sum.
 * A block is one group × 4 activation rows (16 accumulators) or × 1 row. Each lane adds the pairs
 * of a chunk of {@link #CHUNK_PAIRS} in order {@code k = 0, 1, …}, element {@code 2k + 1} before
 * {@code 2k}, each with a fused multiply-add, and the chunks' sums in order: the same in both
 * blocks and in {@link Scalar16}, so a row's result does not depend on the batch or the path; and
 * with activations rounded to BF16, the bits of oneDNN's BF16 matmul called per chunk ({@link
 * Bf16Gemm}: {@code vdpbf16ps} adds a pair's odd product first, each step an FP32 fused add, and a
 * call's reduction of up to 512 inputs is one such chain, whatever its rows).
 *
 * <p>Where oneDNN runs its BF16 products on AMX tiles ({@link Scalar16#tileOrder}), the kernels add
 * as {@code tdpbf16ps} does instead: per block of {@link #TILE_PAIRS} pairs (32 inputs, one tile
 * instruction), the even products in one chain and the odd ones in another, each from zero, then
 * the chunk's sum plus (even + odd); the chunks as before. Two chains per output do not fit 4
 * activation rows in the 32 vector registers, so that order runs blocks of 2 rows.
 *
 * <p>Written for C2: the widening is a constant of the class (one class per dtype rather than a
 * flag) and vectors never leave a method un-inlined (the stores are written out in each block:
 * through a helper taking the accumulators, C2 ran out of inlining budget in the 4-row block and
 * boxed them, 5–7× slower), because a vector that C2 cannot keep in registers is boxed on the heap.
 */
final class Bf16Kernel {
  private static final VectorSpecies<Integer> I = IntVector.SPECIES_PREFERRED;
  private static final VectorSpecies<Float> F = FloatVector.SPECIES_PREFERRED;
  private static final int L = I.length();
  private static final int G = 4 * L; // Matrix.GROUP
  private static final ThreadLocal<float[]> PARTIAL = ThreadLocal.withInitial(() -> new float[0]);

  /**
   * Input pairs per chunk of the reduction: 512 inputs, each chunk's sum a chain of its own, the
   * chunks' sums added in order.
   */
  static final int CHUNK_PAIRS = 256;

  private static final ThreadLocal<float[]> TOTALS = ThreadLocal.withInitial(() -> new float[0]);

  /** Input pairs per AMX tile instruction's sums (32 BF16 inputs). */
  static final int TILE_PAIRS = 16;

  /** Ints per vector: a quarter of {@link Matrix#GROUP}. */
  static final int LANES = L;

  private Bf16Kernel() {}

  /**
   * {@code y[b·yStride + yOff + o] (+)= Σ_i x[b, i] · W[o, i]} for {@code o ∈ [o0, o1)} and all
   * {@code rows} rows; {@code w} holds rows {@code [wRow0, …)} of W ({@link Matrix#tiled}, {@code
   * half} ints each, {@code wRow0} a group start), x rows are packed, {@code 2·half} floats apart.
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
    range(Scalar16.tileOrder(), x, rows, half, w, wRow0, y, yStride, yOff, o0, o1, add);
  }

  /** {@link #range} adding in AMX's order ({@code tiles}) or {@code vdpbf16ps}'s. */
  static void range(
      boolean tiles,
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
    if ((o - wRow0) % G != 0) { // a partial first group
      int end = Math.min(o1, o - (o - wRow0) % G + G);
      partial(tiles, x, rows, half, w, wRow0, y, yStride, yOff, o, end, add);
      o = end;
    }
    int full = o + (o1 - o) / G * G;
    if ((long) rows * half * 8 <= X_IN_L1)
      groups(tiles, x, 0, rows, half, w, wRow0, y, yStride, yOff, o, full, add);
    else
      // the activation rows outgrow L1: a chunk of groups that stays in L2 meets the activations 4
      // rows at a time, so each 4-row block of x is read from L1, the chunk's weights from L2, and
      // the weights from memory still once
      for (int c = o, step = chunkRows(half * 4L); c < full; c += step) {
        int c1 = Math.min(full, c + step);
        for (int b = 0; b < rows; b += 4)
          groups(tiles, x, b, Math.min(rows, b + 4), half, w, wRow0, y, yStride, yOff, c, c1, add);
      }
    if (full < o1) partial(tiles, x, rows, half, w, wRow0, y, yStride, yOff, full, o1, add);
  }

  /**
   * Bytes of activation rows that stay in a core's L1 data cache (48 KB on recent x86) with room
   * (also {@link Q8Kernel}'s).
   */
  static final long X_IN_L1 = 32 << 10;

  /**
   * Weight rows per chunk of rows of {@code rowBytes} bytes: whole groups of about 256 KB, a part
   * of a core's L2 (1–2 MB) (also {@link Q8Kernel}'s).
   */
  static int chunkRows(long rowBytes) {
    return (int) Math.max(G, (256 << 10) / rowBytes / G * G);
  }

  /** Whole groups {@code [o, o1)} for activation rows {@code [b0, b1)}, stored in y. */
  private static void groups(
      boolean tiles,
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
    int xs = 2 * half;
    float[] sums = tiles ? totals(4 * G) : null;
    for (; o < o1; o += G) {
      int g = (o - wRow0) * half; // the group's first int
      int b = b0;
      if (tiles) {
        for (; b < b1; b += 2) {
          int n = Math.min(2, b1 - b);
          tiles(n, x, b * xs, xs, half, w, g, y, b * yStride + yOff + o, yStride, add, sums);
        }
        continue;
      }
      for (; b + 3 < b1; b += 4)
        four(x, b * xs, xs, half, w, g, y, b * yStride + yOff + o, yStride, add);
      for (; b < b1; b++) one(x, b * xs, half, w, g, y, b * yStride + yOff + o, add);
    }
  }

  /**
   * {@link #block4} over the whole reduction: in one call where it is one chunk, else chunk by
   * chunk into a scratch that holds the chunks' running sum, then into y.
   */
  private static void four(
      float[] x, int x0, int xs, int half, int[] w, int g, float[] y, int y0, int ys, boolean add) {
    if (half <= CHUNK_PAIRS) {
      block4(x, x0, xs, half, 0, half, w, g, y, y0, ys, add);
      return;
    }
    float[] t = totals(4 * G);
    for (int k = 0; k < half; k += CHUNK_PAIRS)
      block4(x, x0, xs, half, k, Math.min(half, k + CHUNK_PAIRS), w, g, t, 0, G, k > 0);
    store(t, 4, y, y0, ys, add);
  }

  /** {@link #four} for one activation row. */
  private static void one(
      float[] x, int x0, int half, int[] w, int g, float[] y, int y0, boolean add) {
    if (half <= CHUNK_PAIRS) {
      block1(x, x0, half, 0, half, w, g, y, y0, add);
      return;
    }
    float[] t = totals(G);
    for (int k = 0; k < half; k += CHUNK_PAIRS)
      block1(x, x0, half, k, Math.min(half, k + CHUNK_PAIRS), w, g, t, 0, k > 0);
    store(t, 1, y, y0, 0, add);
  }

  /**
   * {@link #tile2} (2 rows) or {@link #tile1} (1) over the whole reduction: each chunk's sums into
   * {@code sums} ({@code 4 × G} floats: the total so far, then the chunk's), added in order, then
   * into (or added to) y.
   */
  private static void tiles(
      int rows,
      float[] x,
      int x0,
      int xs,
      int half,
      int[] w,
      int g,
      float[] y,
      int y0,
      int ys,
      boolean add,
      float[] sums) {
    int n = rows * G, chunk = 2 * G;
    for (int k = 0; k < half; k += CHUNK_PAIRS) {
      int k1 = Math.min(half, k + CHUNK_PAIRS), at = k == 0 ? 0 : chunk;
      Arrays.fill(sums, at, at + n, 0f);
      for (int b = k; b < k1; b += TILE_PAIRS) {
        int end = Math.min(k1, b + TILE_PAIRS);
        if (rows == 2) tile2(x, x0, xs, half, b, end, w, g, sums, at);
        else tile1(x, x0, half, b, end, w, g, sums, at);
      }
      if (k > 0)
        for (int i = 0; i < n; i += L)
          FloatVector.fromArray(F, sums, i)
              .add(FloatVector.fromArray(F, sums, chunk + i))
              .intoArray(sums, i);
    }
    store(sums, rows, y, y0, ys, add);
  }

  private static float[] totals(int n) {
    float[] t = TOTALS.get();
    if (t.length < n) TOTALS.set(t = new float[n]);
    return t;
  }

  /** {@code rows} rows of a group's sums ({@code G} apart in t) into, or added to, y. */
  private static void store(float[] t, int rows, float[] y, int y0, int ys, boolean add) {
    for (int b = 0; b < rows; b++)
      for (int i = 0; i < G; i += L) {
        int at = y0 + b * ys + i;
        if (add)
          FloatVector.fromArray(F, t, b * G + i)
              .add(FloatVector.fromArray(F, y, at))
              .intoArray(y, at);
        else FloatVector.fromArray(F, t, b * G + i).intoArray(y, at);
      }
  }

  /**
   * Outputs {@code [o, end)} of one group: the whole group into a scratch, then the wanted part
   * into y (the first or last group of a range that does not cover it).
   */
  private static void partial(
      boolean tiles,
      float[] x,
      int rows,
      int half,
      int[] w,
      int wRow0,
      float[] y,
      int yStride,
      int yOff,
      int o,
      int end,
      boolean add) {
    int start = o - (o - wRow0) % G, g = (start - wRow0) * half;
    float[] s = PARTIAL.get();
    if (s.length < rows * G) PARTIAL.set(s = new float[rows * G]);
    int xs = 2 * half, b = 0;
    if (tiles) {
      float[] sums = totals(4 * G);
      for (; b < rows; b += 2)
        tiles(Math.min(2, rows - b), x, b * xs, xs, half, w, g, s, b * G, G, false, sums);
    } else {
      for (; b + 3 < rows; b += 4) four(x, b * xs, xs, half, w, g, s, b * G, G, false);
      for (; b < rows; b++) one(x, b * xs, half, w, g, s, b * G, false);
    }
    copyPart(s, rows, start, o, end, y, yStride, yOff, add);
  }

  /**
   * Outputs {@code [o, end)} of a group starting at row {@code start}, computed into {@code s}
   * ({@code rows × GROUP}), stored or added into y.
   */
  static void copyPart(
      float[] s,
      int rows,
      int start,
      int o,
      int end,
      float[] y,
      int yStride,
      int yOff,
      boolean add) {
    for (int b = 0; b < rows; b++)
      for (int i = o; i < end; i++) {
        int yi = b * yStride + yOff + i;
        float v = s[b * G + i - start];
        y[yi] = add ? y[yi] + v : v;
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

  /**
   * One group × activation rows at {@code x0, x0 + xs, …} (4 rows), pairs {@code [k0, k1)}, into
   * (or added to) y rows {@code ys} apart.
   */
  private static void block4(
      float[] x,
      int x0,
      int xs,
      int half,
      int k0,
      int k1,
      int[] w,
      int g,
      float[] y,
      int y0,
      int ys,
      boolean add) {
    int x1 = x0 + xs, x2 = x1 + xs, x3 = x2 + xs;
    FloatVector a00 = FloatVector.zero(F), a01 = a00, a02 = a00, a03 = a00;
    FloatVector a10 = a00, a11 = a00, a12 = a00, a13 = a00;
    FloatVector a20 = a00, a21 = a00, a22 = a00, a23 = a00;
    FloatVector a30 = a00, a31 = a00, a32 = a00, a33 = a00;
    for (int k = k0, at = g + k0 * G; k < k1; k++, at += G) {
      IntVector v0 = IntVector.fromArray(I, w, at), v1 = IntVector.fromArray(I, w, at + L);
      IntVector v2 = IntVector.fromArray(I, w, at + 2 * L);
      IntVector v3 = IntVector.fromArray(I, w, at + 3 * L);
      FloatVector l0 = lo(v0), l1 = lo(v1), l2 = lo(v2), l3 = lo(v3);
      FloatVector h0 = hi(v0), h1 = hi(v1), h2 = hi(v2), h3 = hi(v3);
      FloatVector e = FloatVector.broadcast(F, x[x0 + k]);
      FloatVector d = FloatVector.broadcast(F, x[x0 + half + k]);
      a00 = l0.fma(e, h0.fma(d, a00));
      a01 = l1.fma(e, h1.fma(d, a01));
      a02 = l2.fma(e, h2.fma(d, a02));
      a03 = l3.fma(e, h3.fma(d, a03));
      e = FloatVector.broadcast(F, x[x1 + k]);
      d = FloatVector.broadcast(F, x[x1 + half + k]);
      a10 = l0.fma(e, h0.fma(d, a10));
      a11 = l1.fma(e, h1.fma(d, a11));
      a12 = l2.fma(e, h2.fma(d, a12));
      a13 = l3.fma(e, h3.fma(d, a13));
      e = FloatVector.broadcast(F, x[x2 + k]);
      d = FloatVector.broadcast(F, x[x2 + half + k]);
      a20 = l0.fma(e, h0.fma(d, a20));
      a21 = l1.fma(e, h1.fma(d, a21));
      a22 = l2.fma(e, h2.fma(d, a22));
      a23 = l3.fma(e, h3.fma(d, a23));
      e = FloatVector.broadcast(F, x[x3 + k]);
      d = FloatVector.broadcast(F, x[x3 + half + k]);
      a30 = l0.fma(e, h0.fma(d, a30));
      a31 = l1.fma(e, h1.fma(d, a31));
      a32 = l2.fma(e, h2.fma(d, a32));
      a33 = l3.fma(e, h3.fma(d, a33));
    }
    int y1 = y0 + ys, y2 = y1 + ys, y3 = y2 + ys;
    if (add) {
      a00 = a00.add(FloatVector.fromArray(F, y, y0));
      a01 = a01.add(FloatVector.fromArray(F, y, y0 + L));
      a02 = a02.add(FloatVector.fromArray(F, y, y0 + 2 * L));
      a03 = a03.add(FloatVector.fromArray(F, y, y0 + 3 * L));
    }
    a00.intoArray(y, y0);
    a01.intoArray(y, y0 + L);
    a02.intoArray(y, y0 + 2 * L);
    a03.intoArray(y, y0 + 3 * L);
    if (add) {
      a10 = a10.add(FloatVector.fromArray(F, y, y1));
      a11 = a11.add(FloatVector.fromArray(F, y, y1 + L));
      a12 = a12.add(FloatVector.fromArray(F, y, y1 + 2 * L));
      a13 = a13.add(FloatVector.fromArray(F, y, y1 + 3 * L));
    }
    a10.intoArray(y, y1);
    a11.intoArray(y, y1 + L);
    a12.intoArray(y, y1 + 2 * L);
    a13.intoArray(y, y1 + 3 * L);
    if (add) {
      a20 = a20.add(FloatVector.fromArray(F, y, y2));
      a21 = a21.add(FloatVector.fromArray(F, y, y2 + L));
      a22 = a22.add(FloatVector.fromArray(F, y, y2 + 2 * L));
      a23 = a23.add(FloatVector.fromArray(F, y, y2 + 3 * L));
    }
    a20.intoArray(y, y2);
    a21.intoArray(y, y2 + L);
    a22.intoArray(y, y2 + 2 * L);
    a23.intoArray(y, y2 + 3 * L);
    if (add) {
      a30 = a30.add(FloatVector.fromArray(F, y, y3));
      a31 = a31.add(FloatVector.fromArray(F, y, y3 + L));
      a32 = a32.add(FloatVector.fromArray(F, y, y3 + 2 * L));
      a33 = a33.add(FloatVector.fromArray(F, y, y3 + 3 * L));
    }
    a30.intoArray(y, y3);
    a31.intoArray(y, y3 + L);
    a32.intoArray(y, y3 + 2 * L);
    a33.intoArray(y, y3 + 3 * L);
  }

  /** One group × one activation row at {@code x0}, in {@link #block4}'s order per lane. */
  private static void block1(
      float[] x, int x0, int half, int k0, int k1, int[] w, int g, float[] y, int y0, boolean add) {
    FloatVector a0 = FloatVector.zero(F), a1 = a0, a2 = a0, a3 = a0;
    for (int k = k0, at = g + k0 * G; k < k1; k++, at += G) {
      FloatVector e = FloatVector.broadcast(F, x[x0 + k]);
      FloatVector d = FloatVector.broadcast(F, x[x0 + half + k]);
      IntVector v0 = IntVector.fromArray(I, w, at), v1 = IntVector.fromArray(I, w, at + L);
      IntVector v2 = IntVector.fromArray(I, w, at + 2 * L);
      IntVector v3 = IntVector.fromArray(I, w, at + 3 * L);
      a0 = lo(v0).fma(e, hi(v0).fma(d, a0));
      a1 = lo(v1).fma(e, hi(v1).fma(d, a1));
      a2 = lo(v2).fma(e, hi(v2).fma(d, a2));
      a3 = lo(v3).fma(e, hi(v3).fma(d, a3));
    }
    if (add) {
      a0 = a0.add(FloatVector.fromArray(F, y, y0));
      a1 = a1.add(FloatVector.fromArray(F, y, y0 + L));
      a2 = a2.add(FloatVector.fromArray(F, y, y0 + 2 * L));
      a3 = a3.add(FloatVector.fromArray(F, y, y0 + 3 * L));
    }
    a0.intoArray(y, y0);
    a1.intoArray(y, y0 + L);
    a2.intoArray(y, y0 + 2 * L);
    a3.intoArray(y, y0 + 3 * L);
  }

  /**
   * One tile of pairs {@code [k0, k1)} ({@link #TILE_PAIRS} or fewer) × one group × activation rows
   * {@code x0} and {@code x0 + xs}, in AMX's order: an even chain and an odd chain, then {@code c
   * += even + odd} for the chunk's sums {@code c} in {@code s} (row 0 at {@code s0}, row 1 {@code
   * G} after it). One tile per call, the sums in memory, so that the method is {@link #block4}'s
   * shape (accumulators from zero, one loop, then stores): with the tiles' loop inside and the sums
   * in registers across it, C2 compiled the stores as calls in about one JVM in three (the same
   * code and run: the medium model at 6 streams on an Emerald Rapids VM, 2026-11-28), boxing every
   * sum: ~1–3 GB/s of garbage, a young GC every 0.2–0.7 s, half the decode rate for the JVM's life.
   * The cause was C2's class-check trap limit, which a compile with more inlined vector calls
   * reaches sooner; JVMs now start with {@code -XX:PerMethodTrapLimit=1000} ({@link
   * VectorSupport#TRAP_LIMIT}, docs/engine.md "Boxed kernels"), and this shape keeps the margin.
   */
  private static void tile2(
      float[] x, int x0, int xs, int half, int k0, int k1, int[] w, int g, float[] s, int s0) {
    int x1 = x0 + xs, s1 = s0 + G;
    FloatVector e00 = FloatVector.zero(F), e01 = e00, e02 = e00, e03 = e00;
    FloatVector o00 = e00, o01 = e00, o02 = e00, o03 = e00;
    FloatVector e10 = e00, e11 = e00, e12 = e00, e13 = e00;
    FloatVector o10 = e00, o11 = e00, o12 = e00, o13 = e00;
    for (int k = k0, at = g + k0 * G; k < k1; k++, at += G) {
      IntVector v0 = IntVector.fromArray(I, w, at), v1 = IntVector.fromArray(I, w, at + L);
      IntVector v2 = IntVector.fromArray(I, w, at + 2 * L);
      IntVector v3 = IntVector.fromArray(I, w, at + 3 * L);
      FloatVector l0 = lo(v0), l1 = lo(v1), l2 = lo(v2), l3 = lo(v3);
      FloatVector e = FloatVector.broadcast(F, x[x0 + k]);
      FloatVector f = FloatVector.broadcast(F, x[x1 + k]);
      e00 = l0.fma(e, e00);
      e01 = l1.fma(e, e01);
      e02 = l2.fma(e, e02);
      e03 = l3.fma(e, e03);
      e10 = l0.fma(f, e10);
      e11 = l1.fma(f, e11);
      e12 = l2.fma(f, e12);
      e13 = l3.fma(f, e13);
      FloatVector h0 = hi(v0), h1 = hi(v1), h2 = hi(v2), h3 = hi(v3);
      e = FloatVector.broadcast(F, x[x0 + half + k]);
      f = FloatVector.broadcast(F, x[x1 + half + k]);
      o00 = h0.fma(e, o00);
      o01 = h1.fma(e, o01);
      o02 = h2.fma(e, o02);
      o03 = h3.fma(e, o03);
      o10 = h0.fma(f, o10);
      o11 = h1.fma(f, o11);
      o12 = h2.fma(f, o12);
      o13 = h3.fma(f, o13);
    }
    FloatVector.fromArray(F, s, s0).add(e00.add(o00)).intoArray(s, s0);
    FloatVector.fromArray(F, s, s0 + L).add(e01.add(o01)).intoArray(s, s0 + L);
    FloatVector.fromArray(F, s, s0 + 2 * L).add(e02.add(o02)).intoArray(s, s0 + 2 * L);
    FloatVector.fromArray(F, s, s0 + 3 * L).add(e03.add(o03)).intoArray(s, s0 + 3 * L);
    FloatVector.fromArray(F, s, s1).add(e10.add(o10)).intoArray(s, s1);
    FloatVector.fromArray(F, s, s1 + L).add(e11.add(o11)).intoArray(s, s1 + L);
    FloatVector.fromArray(F, s, s1 + 2 * L).add(e12.add(o12)).intoArray(s, s1 + 2 * L);
    FloatVector.fromArray(F, s, s1 + 3 * L).add(e13.add(o13)).intoArray(s, s1 + 3 * L);
  }

  /** One tile × one group × one activation row at {@code x0}, as {@link #tile2}. */
  private static void tile1(
      float[] x, int x0, int half, int k0, int k1, int[] w, int g, float[] s, int s0) {
    FloatVector e0 = FloatVector.zero(F), e1 = e0, e2 = e0, e3 = e0;
    FloatVector o0 = e0, o1 = e0, o2 = e0, o3 = e0;
    for (int k = k0, at = g + k0 * G; k < k1; k++, at += G) {
      FloatVector e = FloatVector.broadcast(F, x[x0 + k]);
      FloatVector d = FloatVector.broadcast(F, x[x0 + half + k]);
      IntVector v0 = IntVector.fromArray(I, w, at), v1 = IntVector.fromArray(I, w, at + L);
      IntVector v2 = IntVector.fromArray(I, w, at + 2 * L);
      IntVector v3 = IntVector.fromArray(I, w, at + 3 * L);
      e0 = lo(v0).fma(e, e0);
      e1 = lo(v1).fma(e, e1);
      e2 = lo(v2).fma(e, e2);
      e3 = lo(v3).fma(e, e3);
      o0 = hi(v0).fma(d, o0);
      o1 = hi(v1).fma(d, o1);
      o2 = hi(v2).fma(d, o2);
      o3 = hi(v3).fma(d, o3);
    }
    FloatVector.fromArray(F, s, s0).add(e0.add(o0)).intoArray(s, s0);
    FloatVector.fromArray(F, s, s0 + L).add(e1.add(o1)).intoArray(s, s0 + L);
    FloatVector.fromArray(F, s, s0 + 2 * L).add(e2.add(o2)).intoArray(s, s0 + 2 * L);
    FloatVector.fromArray(F, s, s0 + 3 * L).add(e3.add(o3)).intoArray(s, s0 + 3 * L);
  }
}
