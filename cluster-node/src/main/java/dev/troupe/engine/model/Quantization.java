package dev.troupe.engine.model;

import java.util.Locale;

/**
 * How a runner keeps weight matrices beyond their dtype (flag {@code --quantization}, as vLLM's):
 * {@link #NONE}, or {@link #Q8_0}, llama.cpp's 8-bit format (a signed byte per weight, one FP16
 * scale per 32 consecutive weights of a row), built from the checkpoint at load. The CPU runner
 * only.
 */
public enum Quantization {
  NONE("none"),
  Q8_0("q8_0");

  private final String flag;

  Quantization(String flag) {
    this.flag = flag;
  }

  /** The flag's value for this method. */
  public String flag() {
    return flag;
  }

  /**
   * {@code value} as a method: {@code q8_0}, or {@code none} / empty for none (any case).
   *
   * @throws IllegalArgumentException naming the accepted values
   */
  public static Quantization parse(String value) {
    String v = value == null ? "" : value.trim().toLowerCase(Locale.ROOT);
    if (v.isEmpty() || v.equals("none")) return NONE;
    if (v.equals("q8_0")) return Q8_0;
    throw new IllegalArgumentException(
        "--quantization must be q8_0 (8-bit weights in blocks of 32, the CPU runner) or none, got "
            + value);
  }
}
