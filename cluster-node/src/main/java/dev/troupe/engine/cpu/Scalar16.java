package dev.troupe.engine.cpu;

import dev.troupe.engine.ComputeSettings;
import dev.troupe.engine.model.DType;

/**
 * Plain-Java products on packed 16-bit weights (the layout of {@link Matrix#tiled}), used when the
 * Vector API is not in the JVM: the kernels' results bit for bit (the same fused multiply-adds in
 * the same order), far slower. Also the widening of one packed int, and the rounding of one
 * activation to BF16 for oneDNN.
 */
final class Scalar16 {
  private Scalar16() {}

  /**
   * Whether this JVM's kernels add in AMX's order: where oneDNN's BF16 products run on AMX tiles
   * ({@link Bf16Gemm#onAmx}), so that generated rows keep one set of bits on either path; else in
   * {@code vdpbf16ps}'s, the faster for the kernels at 4–15 rows (also where oneDNN is off or
   * absent, or generated rows are kept off it: {@code bf16-gemm-decode-rows = 0}). Decided at the
   * first product (here, not in {@link Bf16Kernel}, which needs the Vector API), not when a class
   * loads: {@link VectorSupport}'s self-check runs before {@link Matrix} (which oneDNN's probe
   * reads) is set up.
   */
  static boolean tileOrder() {
    return Order.TILES;
  }

  private static final class Order {
    static final boolean TILES = onAmx();

    private static boolean onAmx() {
      if (ComputeSettings.jvm().bf16GemmDecodeRows() == 0) return false; // no row goes to AMX
      try {
        return Bf16Gemm.onAmx();
      } catch (LinkageError e) { // oneDNN's classes left out (the GPU test bundle)
        return false;
      }
    }
  }

  /**
   * {@code f} to BF16 as oneDNN's f32 → bf16 reorder (and the CPU's {@code vcvtneps2bf16}) rounds
   * it: to nearest even, NaN stays NaN, a subnormal becomes a zero of its sign (which the BF16
   * dot-product instructions would read as zero anyway). {@link Vec32#toBf16} on many.
   */
  static short toBf16(float f) {
    int u = Float.floatToRawIntBits(f);
    return (u & 0x7f800000) == 0 ? (short) ((u >>> 16) & 0x8000) : DType.floatToBf16(f);
  }

  /** {@code f} rounded to BF16 ({@link #toBf16}) and back to FP32. */
  static float roundToBf16(float f) {
    return Float.intBitsToFloat(toBf16(f) << 16);
  }

  /** Element {@code 2k} of a packed int. */
  static float lo(boolean f16, int v) {
    return f16 ? DType.f16ToFloat((short) v) : Float.intBitsToFloat(v << 16);
  }

  /** Element {@code 2k + 1} of a packed int. */
  static float hi(boolean f16, int v) {
    return f16 ? DType.f16ToFloat((short) (v >>> 16)) : Float.intBitsToFloat(v & 0xffff0000);
  }

  /** As {@link Bf16Kernel#range} (or {@link F16Kernel#range}), either dtype. */
  static void range(
      boolean f16,
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
    boolean tiles = !f16 && tileOrder();
    range(f16, tiles, x, rows, half, w, wRow0, y, yStride, yOff, o0, o1, add);
  }

  /** {@link #range}, BF16 in AMX's order ({@code tiles}) or {@code vdpbf16ps}'s. */
  static void range(
      boolean f16,
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
    for (int o = o0; o < o1; o++) {
      int r = o - wRow0, at = Matrix.tiled(r, 0, half);
      for (int b = 0; b < rows; b++) {
        int xo = b * 2 * half;
        float s = 0;
        if (f16)
          for (int k = 0; k < half; k++) {
            int v = w[at + k * Matrix.GROUP];
            s = Math.fma(hi(true, v), x[xo + half + k], Math.fma(lo(true, v), x[xo + k], s));
          }
        else // Bf16Kernel's chunks: each pair's odd element first, or AMX's blocks of two chains
        for (int k0 = 0; k0 < half; k0 += Bf16Kernel.CHUNK_PAIRS) {
            float c = 0;
            int k1 = Math.min(half, k0 + Bf16Kernel.CHUNK_PAIRS);
            if (tiles)
              for (int t = k0; t < k1; t += Bf16Kernel.TILE_PAIRS) {
                float even = 0, odd = 0;
                for (int k = t; k < Math.min(k1, t + Bf16Kernel.TILE_PAIRS); k++) {
                  int v = w[at + k * Matrix.GROUP];
                  even = Math.fma(lo(false, v), x[xo + k], even);
                  odd = Math.fma(hi(false, v), x[xo + half + k], odd);
                }
                c += even + odd;
              }
            else
              for (int k = k0; k < k1; k++) {
                int v = w[at + k * Matrix.GROUP];
                c = Math.fma(lo(false, v), x[xo + k], Math.fma(hi(false, v), x[xo + half + k], c));
              }
            s = k0 == 0 ? c : s + c;
          }
        int yi = b * yStride + yOff + o;
        y[yi] = add ? y[yi] + s : s;
      }
    }
  }
}
