package dev.troupe.engine.cpu;

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
   * {@code f} to BF16 as oneDNN's f32 → bf16 reorder (and the CPU's {@code vcvtneps2bf16}) rounds
   * it: to nearest even, NaN stays NaN, a subnormal becomes a zero of its sign (which the BF16
   * dot-product instructions would read as zero anyway). {@link Vec32#toBf16} on many.
   */
  static short toBf16(float f) {
    int u = Float.floatToRawIntBits(f);
    return (u & 0x7f800000) == 0 ? (short) ((u >>> 16) & 0x8000) : DType.floatToBf16(f);
  }

  /** Element {@code 2k} of a packed int. */
  static float lo(boolean f16, int v) {
    return f16 ? DType.f16ToFloat((short) v) : Float.intBitsToFloat(v << 16);
  }

  /** Element {@code 2k + 1} of a packed int. */
  static float hi(boolean f16, int v) {
    return f16 ? DType.f16ToFloat((short) (v >>> 16)) : Float.intBitsToFloat(v & 0xffff0000);
  }

  /** As {@link Bf16Kernel#range}, either dtype. */
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
    for (int o = o0; o < o1; o++) {
      int r = o - wRow0, at = Matrix.tiled(r, 0, half);
      for (int b = 0; b < rows; b++) {
        int xo = b * 2 * half;
        float s = 0;
        for (int k = 0; k < half; k++) {
          int v = w[at + k * Matrix.GROUP];
          s = Math.fma(hi(f16, v), x[xo + half + k], Math.fma(lo(f16, v), x[xo + k], s));
        }
        int yi = b * yStride + yOff + o;
        y[yi] = add ? y[yi] + s : s;
      }
    }
  }
}
