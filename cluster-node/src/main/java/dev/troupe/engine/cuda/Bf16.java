package dev.troupe.engine.cuda;

/**
 * float → bfloat16 bits, rounding to nearest even (NaN stays NaN) — the same rule as the kernels'
 * {@code f2bf} and PyTorch's {@code .to(torch.bfloat16)}. The other way is {@code
 * DType.bf16ToFloat}.
 */
public final class Bf16 {
  private Bf16() {}

  public static short fromFloat(float f) {
    int u = Float.floatToRawIntBits(f);
    if ((u & 0x7fffffff) > 0x7f800000) return (short) ((u >>> 16) | 0x40);
    u += 0x7fff + ((u >>> 16) & 1);
    return (short) (u >>> 16);
  }

  /** The float that {@code f} becomes after a round trip through bfloat16. */
  public static float round(float f) {
    return Float.intBitsToFloat((fromFloat(f) & 0xffff) << 16);
  }
}
