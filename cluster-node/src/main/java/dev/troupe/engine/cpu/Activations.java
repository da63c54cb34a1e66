package dev.troupe.engine.cpu;

/**
 * Activation rows in a product's input layout. FP32 weights read rows as they are; packed 16-bit
 * weights ({@link Bf16Kernel}, {@link F16Kernel}) read each row {@code packed}: the even elements,
 * then the odd ones ({@code 2·⌈n/2⌉} floats, a zero pads an odd length), which pairs lane k with
 * the weight int that holds elements {@code 2k} and {@code 2k + 1}.
 */
final class Activations {
  private Activations() {}

  /** Floats per row of an {@code n}-wide input, packed or not. */
  static int stride(int n, boolean packed) {
    return packed ? 2 * ((n + 1) / 2) : n;
  }

  /** Position of element {@code i} of an {@code n}-wide row in its layout. */
  static int index(int i, int n, boolean packed) {
    return !packed ? i : (i & 1) == 0 ? i >> 1 : (n + 1) / 2 + (i >> 1);
  }

  /** Row {@code src[so .. so+n)} into {@code dst} at {@code dOff} in the chosen layout. */
  static void put(float[] src, int so, int n, float[] dst, int dOff, boolean packed) {
    if (!packed) {
      System.arraycopy(src, so, dst, dOff, n);
      return;
    }
    int half = (n + 1) / 2;
    for (int k = 0; k < n / 2; k++) {
      dst[dOff + k] = src[so + 2 * k];
      dst[dOff + half + k] = src[so + 2 * k + 1];
    }
    if ((n & 1) == 1) {
      dst[dOff + half - 1] = src[so + n - 1];
      dst[dOff + 2 * half - 1] = 0f;
    }
  }

  /** The natural row back from its layout (LoRA reads natural rows). */
  static void get(float[] src, int so, int n, float[] dst, int dOff, boolean packed) {
    if (!packed) {
      System.arraycopy(src, so, dst, dOff, n);
      return;
    }
    int half = (n + 1) / 2;
    for (int i = 0; i < n; i++) dst[dOff + i] = src[so + index(i, n, true)];
  }
}
