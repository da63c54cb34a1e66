package dev.troupe.engine.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.testing.TinyModels;
import dev.troupe.engine.testing.TinyModels.Arch;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The model shapes the kernels are compiled for in the compile checks (every tiny architecture,
 * Qwen3-1.7B, Llama-3.1-8B: the benchmark's), the threads each kernel is launched with, and the
 * check of ptxas's per-kernel report (nvcc's and NVRTC's), shared by {@link KernelCompileTest} and
 * {@link NvrtcCompileTest}.
 */
final class KernelShapes {
  private KernelShapes() {}

  static Map<String, ModelConfig> all() {
    Map<String, ModelConfig> shapes = new TreeMap<>();
    for (Arch a : Arch.values()) shapes.put("tiny-" + a, TinyModels.config(a));
    shapes.put("llama-3.1-8b", TinyModels.llama(128256, 4096, 32, 32, 8, 14336));
    shapes.put(
        "qwen3-1.7b",
        new ModelConfig(
            "Qwen3ForCausalLM",
            151936,
            2048,
            6144,
            28,
            16,
            8,
            128,
            40960,
            1e-6,
            1e6,
            null,
            true,
            false,
            true,
            null,
            List.of(),
            0));
    return shapes;
  }

  /** Threads per block the runner launches {@code kernel} with for {@code c}. */
  static int threads(String kernel, ModelConfig c) {
    return switch (kernel) {
      case "embed_rows", "silu_mul", "lora_expand" -> KernelSource.ELEMENT_THREADS;
      case "add_rmsnorm" -> KernelSource.NORM_THREADS;
      case "qkv_rope_cache" -> KernelSource.QKV_THREADS;
      case "attention" -> 32 * KernelSource.attentionWarps(c);
      case "attention_merge" -> KernelSource.ATT_MERGE_THREADS;
      case "lora_shrink" -> KernelSource.LORA_THREADS;
      case "sample_rows" -> DeviceSampler.THREADS;
      case "add_f32",
          "fill_f32",
          "f32_to_bf16",
          "rmsnorm_bwd",
          "silu_mul_bwd",
          "lm_head_fwd",
          "lm_head_bwd",
          "rl_loss",
          "grad_sumsq",
          "adamw_step",
          "attention_probs",
          "attention_dscores" ->
          KernelSource.TRAIN_THREADS;
      case "qkv_rope_bwd" -> KernelSource.QKV_THREADS;
      default -> throw new IllegalArgumentException(kernel);
    };
  }

  // per kernel: "Function properties for K", then "N bytes stack frame, N bytes spill stores, N
  // bytes spill loads" (NVRTC's log puts "ptxas ." before it), then "Used R registers"
  private static final Pattern REPORT =
      Pattern.compile(
          "Function properties for (\\w+)\\s+(?:ptxas\\s+\\.\\s+)?(\\d+) bytes stack frame, (\\d+)"
              + " bytes spill stores, (\\d+) bytes spill loads\\s+ptxas info\\s+: Used (\\d+)"
              + " registers");

  /**
   * Checks ptxas's report for {@code what}: every kernel there, none with a stack frame or spills,
   * and each block's registers (allocated per thread in units of 8) within the 64 K of a
   * multiprocessor, else the launch fails. Returns "kernel=registers ..." for the record.
   */
  static String checkReport(String what, ModelConfig c, String log) {
    Matcher m = REPORT.matcher(log);
    StringBuilder report = new StringBuilder();
    int kernels = 0;
    while (m.find()) {
      kernels++;
      String k = m.group(1);
      assertEquals("0", m.group(2), what + " " + k + " has a stack frame:\n" + log);
      assertEquals("0", m.group(3), what + " " + k + " spills:\n" + log);
      assertEquals("0", m.group(4), what + " " + k + " spills:\n" + log);
      int regs = Integer.parseInt(m.group(5)), threads = threads(k, c);
      assertTrue(
          (regs + 7) / 8 * 8 * threads <= 65536,
          what + " " + k + ": " + regs + " registers × " + threads + " threads over 64 K");
      report.append(' ').append(k).append('=').append(regs);
    }
    assertEquals(KernelSource.KERNELS.size(), kernels, what + ": kernels in\n" + log);
    return report.toString();
  }
}
