package dev.troupe.engine.cpu;

import dev.troupe.engine.model.DType;

/**
 * The 8-bit weight form of {@link Matrix} ({@code --quantization q8_0}): llama.cpp's Q8_0, a signed
 * byte per weight and one scale per {@link #BLOCK} consecutive weights of a row, {@code W[o, i] =
 * q[o, i] · d[o, i / 32]}. Rows are quantized here as llama.cpp's {@code quantize_row_q8_0} does,
 * so a model served with it has the weights of a Q8_0 GGUF of the same checkpoint; products run on
 * {@link Q8Kernel} (Vector API) or on {@link #product} (plain Java, the same bits).
 */
final class Q8Format {
  /** Weights per scale (Q8_0's block). */
  static final int BLOCK = 32;

  private Q8Format() {}

  /** Bytes per stored row: {@code in} rounded up to whole blocks (the padding is zeros). */
  static int padded(int in) {
    return (in + BLOCK - 1) / BLOCK * BLOCK;
  }

  /**
   * {@link Q8Kernel#range} in plain Java (no Vector API): the same fused multiply-adds in the same
   * order per output, so the same bits.
   */
  static void product(
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
    int blocks = inPad / BLOCK;
    for (int o = o0; o < o1; o++) {
      int r = o - wRow0, gq = r / Matrix.GROUP * inPad, gd = r / Matrix.GROUP * blocks;
      int lane = r % Matrix.GROUP;
      for (int b = 0; b < rows; b++) {
        float t = 0;
        for (int k0 = 0, blk = 0; k0 < in; k0 += BLOCK, blk++) {
          float a = 0;
          for (int k = k0; k < Math.min(in, k0 + BLOCK); k++)
            a = Math.fma(q[(gq + k) * Matrix.GROUP + lane], x[b * in + k], a);
          t = Math.fma(a, d[(gd + blk) * Matrix.GROUP + lane], t);
        }
        int yi = b * yStride + yOff + o;
        y[yi] = add ? y[yi] + t : t;
      }
    }
  }

  /**
   * One row's 8-bit values and scale per block of {@code row[0 .. n)}, as llama.cpp's {@code
   * quantize_row_q8_0} rounds them: {@code d = max|v| / 127} (kept as its nearest F16, as a GGUF
   * Q8_0 block stores it), {@code q = round(v / d)} half away from zero (through the reciprocal of
   * the unrounded d). Writes {@code ceil(n / 32)} scales; values past n are zero.
   */
  static void quantize(float[] row, int n, byte[] q, float[] d) {
    for (int k0 = 0, blk = 0; k0 < n; k0 += BLOCK, blk++) {
      int end = Math.min(n, k0 + BLOCK);
      float amax = 0;
      for (int k = k0; k < end; k++) amax = Math.max(amax, Math.abs(row[k]));
      float scale = amax / 127f, inv = scale != 0 ? 1f / scale : 0f;
      d[blk] = DType.f16ToFloat(DType.floatToF16(scale));
      for (int k = k0; k < k0 + BLOCK; k++) {
        float v = k < end ? row[k] * inv : 0f;
        int r = Math.round(Math.abs(v)); // C's roundf: halves away from zero
        q[k] = (byte) (v < 0 ? -r : r);
      }
    }
  }
}
