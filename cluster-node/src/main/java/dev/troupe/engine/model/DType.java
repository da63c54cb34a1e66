package dev.troupe.engine.model;

/** Element types a weight tensor may be stored in; compute is always FP32. */
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
}
