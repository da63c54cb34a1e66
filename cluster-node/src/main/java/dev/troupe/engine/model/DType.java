package dev.troupe.engine.model;

/**
 * Element types a weight tensor may be stored in (and kept in by a runner); arithmetic is always
 * FP32. Conversions round to nearest even, as torch's {@code .to(dtype)}.
 */
public enum DType {
  F32(4),
  BF16(2),
  F16(2);

  private final int bytes;

  DType(int bytes) {
    this.bytes = bytes;
  }

  public int bytes() {
    return bytes;
  }

  /** The safetensors {@code dtype} string, or null when unsupported. */
  static DType fromSafetensors(String name) {
    return switch (name) {
      case "F32" -> F32;
      case "BF16" -> BF16;
      case "F16" -> F16;
      default -> null;
    };
  }

  /** bfloat16 bits to float: the upper half of an IEEE single. */
  public static float bf16ToFloat(short bits) {
    return Float.intBitsToFloat((bits & 0xffff) << 16);
  }

  /** IEEE half bits to float, subnormals, infinities and NaN included. */
  public static float f16ToFloat(short bits) {
    int h = bits & 0xffff;
    int sign = (h & 0x8000) << 16;
    int exp = (h >>> 10) & 0x1f;
    int mant = h & 0x3ff;
    if (exp == 0x1f) return Float.intBitsToFloat(sign | 0x7f800000 | (mant << 13));
    if (exp == 0) {
      if (mant == 0) return Float.intBitsToFloat(sign);
      // subnormal half: mant · 2^-24, exact in float
      float v = mant * 0x1p-24f;
      return sign == 0 ? v : -v;
    }
    return Float.intBitsToFloat(sign | ((exp - 15 + 127) << 23) | (mant << 13));
  }

  /** The 16-bit pattern of {@code v} in this dtype (BF16 or F16), rounded to nearest even. */
  public short fromFloat(float v) {
    return switch (this) {
      case BF16 -> floatToBf16(v);
      case F16 -> floatToF16(v);
      case F32 -> throw new IllegalArgumentException("F32 is not a 16-bit dtype");
    };
  }

  /** The value of the 16-bit pattern {@code bits} of this dtype (BF16 or F16). */
  public float toFloat(short bits) {
    return switch (this) {
      case BF16 -> bf16ToFloat(bits);
      case F16 -> f16ToFloat(bits);
      case F32 -> throw new IllegalArgumentException("F32 is not a 16-bit dtype");
    };
  }

  /** float to bfloat16, round to nearest even; NaN stays NaN. */
  public static short floatToBf16(float f) {
    int b = Float.floatToRawIntBits(f);
    if (Float.isNaN(f)) return (short) ((b >>> 16) | 0x40);
    b += 0x7fff + ((b >>> 16) & 1);
    return (short) (b >>> 16);
  }

  /** float to IEEE half, round to nearest even; overflow gives infinity, NaN stays NaN. */
  public static short floatToF16(float f) {
    int b = Float.floatToRawIntBits(f);
    int sign = (b >>> 16) & 0x8000;
    if (Float.isNaN(f)) return (short) (sign | 0x7e00);
    int exp = ((b >>> 23) & 0xff) - 127 + 15;
    int mant = b & 0x7fffff;
    if (exp >= 31) return (short) (sign | 0x7c00);
    if (exp <= 0) {
      if (exp < -10) return (short) sign;
      mant |= 0x800000;
      int shift = 14 - exp;
      int half = mant >> shift, rem = mant & ((1 << shift) - 1), mid = 1 << (shift - 1);
      if (rem > mid || (rem == mid && (half & 1) == 1)) half++;
      return (short) (sign | half);
    }
    int half = (exp << 10) | (mant >> 13), rem = mant & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (half & 1) == 1)) half++; // may carry into infinity
    return (short) (sign | half);
  }
}
