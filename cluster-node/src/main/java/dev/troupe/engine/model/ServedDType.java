package dev.troupe.engine.model;

import java.util.List;
import java.util.Locale;

/**
 * vLLM's {@code --dtype}: the dtype weights are served in. {@code auto} takes the checkpoint's own
 * ({@code torch_dtype} in config.json, else the stored dtype of the weights) and serves FP32
 * checkpoints as BF16, as vLLM does on a CPU whose preferred dtype is BF16; {@code half}/{@code
 * float16}, {@code bfloat16}, {@code float}/{@code float32} force one (converting with round to
 * nearest even, or widening).
 */
public final class ServedDType {
  /** The accepted values, as vLLM spells them. */
  public static final List<String> NAMES =
      List.of("auto", "half", "float16", "bfloat16", "float", "float32");

  private ServedDType() {}

  /** Fails with the accepted values unless {@code option} is one. */
  public static String check(String option) {
    if (option == null || !NAMES.contains(option.toLowerCase(Locale.ROOT)))
      throw new IllegalArgumentException(
          "dtype must be one of " + String.join(", ", NAMES) + ", got " + option);
    return option.toLowerCase(Locale.ROOT);
  }

  /**
   * The dtype to serve in.
   *
   * @param configDType the checkpoint's {@code torch_dtype}, or null
   * @param storedDType the dtype the weights are stored in (e.g. the embedding's)
   */
  public static DType resolve(String option, DType configDType, DType storedDType) {
    return switch (check(option)) {
      case "half", "float16" -> DType.F16;
      case "bfloat16" -> DType.BF16;
      case "float", "float32" -> DType.F32;
      default -> {
        DType own = configDType != null ? configDType : storedDType;
        yield own == DType.F32 ? DType.BF16 : own;
      }
    };
  }

  /** {@link #resolve(String, DType, DType)} with the stored dtype of {@code w}'s embedding. */
  public static DType resolve(String option, DType configDType, WeightSource w) {
    return resolve(option, configDType, w.info(TransformerLayout.EMBED).dtype());
  }

  /** A {@code torch_dtype} string of config.json as a dtype, or null when absent or unknown. */
  public static DType fromTorch(String torchDtype) {
    if (torchDtype == null) return null;
    return switch (torchDtype.toLowerCase(Locale.ROOT).replace("torch.", "")) {
      case "float32", "float" -> DType.F32;
      case "bfloat16" -> DType.BF16;
      case "float16", "half" -> DType.F16;
      default -> null;
    };
  }
}
