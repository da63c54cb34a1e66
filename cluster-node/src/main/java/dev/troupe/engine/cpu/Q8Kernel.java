package dev.troupe.engine.cpu;

import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorSpecies;

/**
 * Products {@code y = x · Wᵀ} with 8-bit weights in blocks of {@link #BLOCK} along a row, each
 * block with its own FP32 scale (llama.cpp's Q8_0: {@code W[o, i] = q[o, i] · d[o, i / 32]}), for
 * 1–64 activation rows (Java Vector API). A row's 8-bit values are widened to FP32 in registers
 * ({@code vpmovsxbd} + {@code vcvtdq2ps}): per weight one byte read from memory instead of BF16's
 * two, which is what batch-1 decoding is bound by.
 *
 * <p>Layout ({@link Matrix}'s 8-bit form): per group of {@link Matrix#GROUP} rows, for each input
 * element {@code k}, the group's rows side by side ({@code GROUP} bytes, a quarter of them per
 * vector), so one vector holds element {@code k} of 16 output rows and a lane accumulates one
 * output; the scales per group and block likewise ({@code GROUP} floats). Activations are natural
 * rows ({@code in} floats). Each lane sums a block's products with fused multiply-adds in order
 * {@code k = 0, 1, …} from zero, then adds that sum times the block's scale to the row's total with
 * one more; the same in every block shape and in {@link Q8Format#product}, so a row's result does
 * not depend on the batch or the path.
 */
final class Q8Kernel {
  private static final int BLOCK = Q8Format.BLOCK;

  private static final VectorSpecies<Float> F = FloatVector.SPECIES_PREFERRED;
  private static final int L = F.length();
  private static final int G = 4 * L; // Matrix.GROUP
  private static final VectorSpecies<Byte> B = byteSpecies();
  private static final ThreadLocal<float[]> PARTIAL = ThreadLocal.withInitial(() -> new float[0]);

  private Q8Kernel() {}

  /** A byte species with as many lanes as a float vector, or null where none exists (NEON). */
  private static VectorSpecies<Byte> byteSpecies() {
    int bits = F.vectorBitSize() / 4;
    return bits < 64 ? null : VectorSpecies.of(byte.class, VectorShape.forBitSize(bits));
  }

  /**
   * Whether this kernel runs here, given {@link VectorSupport#AVAILABLE} (else {@link
   * Q8Format#product}): a byte vector with a float vector's lanes exists (not on 128-bit NEON).
   */
  static boolean supported() {
    return B != null && G == Matrix.GROUP;
  }

  /**
   * {@code y[b·yStride + yOff + o] (+)= Σ_i x[b·in + i] · W[o, i]} for {@code o ∈ [o0, o1)} and all
   * {@code rows} rows; {@code q} and {@code d} hold rows {@code [wRow0, …)} of W ({@code wRow0} a
   * group start), {@code inPad} bytes per row (a multiple of {@link #BLOCK}).
   */
  static void range(
      float[] x,
      int rows,
      int in,
      int inPad,
      byte[] q,
      float[] d,
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
      partial(x, rows, in, inPad, q, d, wRow0, y, yStride, yOff, o, end, add);
      o = end;
    }
    int full = o + (o1 - o) / G * G;
    if ((long) rows * in * 4 <= Bf16Kernel.X_IN_L1)
      groups(x, 0, rows, in, inPad, q, d, wRow0, y, yStride, yOff, o, full, add);
    else
      // as Bf16Kernel: a chunk of groups that stays in L2 meets the activations 4 rows at a time
      for (int c = o, step = Bf16Kernel.chunkRows(inPad); c < full; c += step) {
        int c1 = Math.min(full, c + step);
        for (int b = 0; b < rows; b += 4)
          groups(x, b, Math.min(rows, b + 4), in, inPad, q, d, wRow0, y, yStride, yOff, c, c1, add);
      }
    if (full < o1) partial(x, rows, in, inPad, q, d, wRow0, y, yStride, yOff, full, o1, add);
  }

  private static void groups(
      float[] x,
      int b0,
      int b1,
      int in,
      int inPad,
      byte[] q,
      float[] d,
      int wRow0,
      float[] y,
      int yStride,
      int yOff,
      int o,
      int o1,
      boolean add) {
    int blocks = inPad / BLOCK;
    for (; o < o1; o += G) {
      int gq = (o - wRow0) * inPad, gd = (o - wRow0) * blocks; // the group's first byte, scale
      int b = b0;
      for (; b + 3 < b1; b += 4)
        block4(x, b * in, in, q, gq, d, gd, y, b * yStride + yOff + o, yStride, add);
      for (; b < b1; b++) block1(x, b * in, in, q, gq, d, gd, y, b * yStride + yOff + o, add);
    }
  }

  private static void partial(
      float[] x,
      int rows,
      int in,
      int inPad,
      byte[] q,
      float[] d,
      int wRow0,
      float[] y,
      int yStride,
      int yOff,
      int o,
      int end,
      boolean add) {
    int start = o - (o - wRow0) % G;
    float[] s = PARTIAL.get();
    if (s.length < rows * G) PARTIAL.set(s = new float[rows * G]);
    groups(x, 0, rows, in, inPad, q, d, wRow0, s, G, -start, start, start + G, false);
    Bf16Kernel.copyPart(s, rows, start, o, end, y, yStride, yOff, add);
  }

  private static FloatVector widen(byte[] q, int at) {
    return (FloatVector) ByteVector.fromArray(B, q, at).convertShape(VectorOperators.B2F, F, 0);
  }

  private static final ThreadLocal<float[]> T4 = ThreadLocal.withInitial(() -> new float[4 * G]);

  /**
   * One group × 4 activation rows ({@code xs} floats apart) into y rows {@code ys} apart: each k's
   * four byte vectors widened once for the 4 rows, 16 block sums in registers, the totals in an L1
   * scratch between blocks (16 more vectors would not fit the 32 registers). Against two passes of
   * two vectors with the totals in registers, a decode step's products took 26% less time at 4
   * rows, 9% at 8, 6% at 32 ({@code StepProductsBench small N 30 q8_0}).
   */
  private static void block4(
      float[] x,
      int x0,
      int xs,
      byte[] q,
      int gq,
      float[] d,
      int gd,
      float[] y,
      int y0,
      int ys,
      boolean add) {
    int in = xs, x1 = x0 + xs, x2 = x1 + xs, x3 = x2 + xs;
    float[] t = T4.get();
    java.util.Arrays.fill(t, 0f);
    for (int k0 = 0, sd = gd; k0 < in; k0 += BLOCK, sd += G) {
      FloatVector a00 = FloatVector.zero(F), a01 = a00, a02 = a00, a03 = a00;
      FloatVector a10 = a00, a11 = a00, a12 = a00, a13 = a00;
      FloatVector a20 = a00, a21 = a00, a22 = a00, a23 = a00;
      FloatVector a30 = a00, a31 = a00, a32 = a00, a33 = a00;
      for (int k = k0, end = Math.min(in, k0 + BLOCK), at = gq + k0 * G; k < end; k++, at += G) {
        FloatVector w0 = widen(q, at), w1 = widen(q, at + L);
        FloatVector w2 = widen(q, at + 2 * L), w3 = widen(q, at + 3 * L);
        FloatVector e = FloatVector.broadcast(F, x[x0 + k]);
        a00 = w0.fma(e, a00);
        a01 = w1.fma(e, a01);
        a02 = w2.fma(e, a02);
        a03 = w3.fma(e, a03);
        e = FloatVector.broadcast(F, x[x1 + k]);
        a10 = w0.fma(e, a10);
        a11 = w1.fma(e, a11);
        a12 = w2.fma(e, a12);
        a13 = w3.fma(e, a13);
        e = FloatVector.broadcast(F, x[x2 + k]);
        a20 = w0.fma(e, a20);
        a21 = w1.fma(e, a21);
        a22 = w2.fma(e, a22);
        a23 = w3.fma(e, a23);
        e = FloatVector.broadcast(F, x[x3 + k]);
        a30 = w0.fma(e, a30);
        a31 = w1.fma(e, a31);
        a32 = w2.fma(e, a32);
        a33 = w3.fma(e, a33);
      }
      FloatVector s0 = FloatVector.fromArray(F, d, sd), s1 = FloatVector.fromArray(F, d, sd + L);
      FloatVector s2 = FloatVector.fromArray(F, d, sd + 2 * L);
      FloatVector s3 = FloatVector.fromArray(F, d, sd + 3 * L);
      a00.fma(s0, FloatVector.fromArray(F, t, 0)).intoArray(t, 0);
      a01.fma(s1, FloatVector.fromArray(F, t, L)).intoArray(t, L);
      a02.fma(s2, FloatVector.fromArray(F, t, 2 * L)).intoArray(t, 2 * L);
      a03.fma(s3, FloatVector.fromArray(F, t, 3 * L)).intoArray(t, 3 * L);
      a10.fma(s0, FloatVector.fromArray(F, t, G)).intoArray(t, G);
      a11.fma(s1, FloatVector.fromArray(F, t, G + L)).intoArray(t, G + L);
      a12.fma(s2, FloatVector.fromArray(F, t, G + 2 * L)).intoArray(t, G + 2 * L);
      a13.fma(s3, FloatVector.fromArray(F, t, G + 3 * L)).intoArray(t, G + 3 * L);
      a20.fma(s0, FloatVector.fromArray(F, t, 2 * G)).intoArray(t, 2 * G);
      a21.fma(s1, FloatVector.fromArray(F, t, 2 * G + L)).intoArray(t, 2 * G + L);
      a22.fma(s2, FloatVector.fromArray(F, t, 2 * G + 2 * L)).intoArray(t, 2 * G + 2 * L);
      a23.fma(s3, FloatVector.fromArray(F, t, 2 * G + 3 * L)).intoArray(t, 2 * G + 3 * L);
      a30.fma(s0, FloatVector.fromArray(F, t, 3 * G)).intoArray(t, 3 * G);
      a31.fma(s1, FloatVector.fromArray(F, t, 3 * G + L)).intoArray(t, 3 * G + L);
      a32.fma(s2, FloatVector.fromArray(F, t, 3 * G + 2 * L)).intoArray(t, 3 * G + 2 * L);
      a33.fma(s3, FloatVector.fromArray(F, t, 3 * G + 3 * L)).intoArray(t, 3 * G + 3 * L);
    }
    for (int r = 0; r < 4; r++)
      for (int i = 0; i < G; i += L) {
        int yi = y0 + r * ys + i;
        FloatVector v = FloatVector.fromArray(F, t, r * G + i);
        if (add) v = v.add(FloatVector.fromArray(F, y, yi));
        v.intoArray(y, yi);
      }
  }

  /** One group × one activation row at {@code x0}, in {@link #block4}'s order per lane. */
  private static void block1(
      float[] x,
      int x0,
      int in,
      byte[] q,
      int gq,
      float[] d,
      int gd,
      float[] y,
      int y0,
      boolean add) {
    FloatVector t0 = FloatVector.zero(F), t1 = t0, t2 = t0, t3 = t0;
    for (int k0 = 0, sd = gd; k0 < in; k0 += BLOCK, sd += G) {
      FloatVector a0 = FloatVector.zero(F), a1 = a0, a2 = a0, a3 = a0;
      for (int k = k0, end = Math.min(in, k0 + BLOCK), at = gq + k0 * G; k < end; k++, at += G) {
        FloatVector e = FloatVector.broadcast(F, x[x0 + k]);
        a0 = widen(q, at).fma(e, a0);
        a1 = widen(q, at + L).fma(e, a1);
        a2 = widen(q, at + 2 * L).fma(e, a2);
        a3 = widen(q, at + 3 * L).fma(e, a3);
      }
      t0 = a0.fma(FloatVector.fromArray(F, d, sd), t0);
      t1 = a1.fma(FloatVector.fromArray(F, d, sd + L), t1);
      t2 = a2.fma(FloatVector.fromArray(F, d, sd + 2 * L), t2);
      t3 = a3.fma(FloatVector.fromArray(F, d, sd + 3 * L), t3);
    }
    if (add) {
      t0 = t0.add(FloatVector.fromArray(F, y, y0));
      t1 = t1.add(FloatVector.fromArray(F, y, y0 + L));
      t2 = t2.add(FloatVector.fromArray(F, y, y0 + 2 * L));
      t3 = t3.add(FloatVector.fromArray(F, y, y0 + 3 * L));
    }
    t0.intoArray(y, y0);
    t1.intoArray(y, y0 + L);
    t2.intoArray(y, y0 + 2 * L);
    t3.intoArray(y, y0 + 3 * L);
  }
}
