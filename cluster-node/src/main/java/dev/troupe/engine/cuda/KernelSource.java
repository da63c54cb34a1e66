package dev.troupe.engine.cuda;

import dev.troupe.engine.ComputeSettings;
import dev.troupe.engine.ModelConfig;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;

/**
 * The CUDA C source of the runner's kernels for one model: a prelude of {@code #define}s fixing the
 * head geometry (so per-head loops unroll and per-lane arrays stay in registers) followed by {@code
 * kernels.cu} (serving) and {@code training.cu} (training), resources beside this class. The same
 * text compiles with NVRTC on the device and, in the tests, as C++ against a CPU emulation of the
 * CUDA built-ins.
 */
public final class KernelSource {
  /**
   * Every kernel of kernels.cu: the serving forward's in the order it uses them, then training's.
   */
  public static final List<String> KERNELS =
      List.of(
          "embed_rows",
          "add_rmsnorm",
          "qkv_rope_cache",
          "attention",
          "attention_merge",
          "silu_mul",
          "lora_shrink",
          "lora_expand",
          "sample_rows",
          // training (CudaTrainer)
          "add_f32",
          "fill_f32",
          "f32_to_bf16",
          "rmsnorm_bwd",
          "silu_mul_bwd",
          "qkv_rope_bwd",
          "attention_probs",
          "attention_dscores",
          "lm_head_fwd",
          "lm_head_bwd",
          "rl_loss",
          "grad_sumsq",
          "adamw_step");

  /** Threads of the blocks of each kernel (the kernels assume these). */
  static final int NORM_THREADS = 256, QKV_THREADS = 128, ELEMENT_THREADS = 256, LORA_THREADS = 128;

  /** Threads of the training kernels' blocks but qkv_rope_bwd's (training.cu). */
  static final int TRAIN_THREADS = 256;

  /**
   * Threads of a training launch of the row-wise norm kernels ({@code add_rmsnorm}, {@code
   * rmsnorm_bwd}: any multiple of 32 works): about 8 elements each, 32 to {@link #NORM_THREADS}
   * (256 from a hidden size of 2,048 up; a small model's rows need no more).
   */
  static int normThreads(int hidden) {
    return Math.max(32, Math.min(NORM_THREADS, (hidden / 8 + 31) / 32 * 32));
  }

  /** Blocks of the optimizer's two launches (kernels.cu's ADAM_BLOCKS). */
  static final int ADAM_BLOCKS = 64;

  /**
   * Shared memory the attention kernel may use: its warps' partial results and the row's running
   * state, GROUP × HEAD_DIM floats each (under the 48 KB a block may declare statically).
   */
  static final int ATT_SHARED_BYTES = 40 * 1024;

  /** Positions per attention partition (kernels.cu's ATT_PART), fixed by absolute position. */
  public static final int ATT_PART = 256;

  /** Threads of {@code attention_merge}'s blocks. */
  static final int ATT_MERGE_THREADS = 128;

  private static final String BODY = readBody();

  private KernelSource() {}

  /**
   * Warps per attention block: as many as the merge buffer allows, 1 to 8. A batch-1 decode step
   * has one block per KV head (8 on Qwen3-1.7B and Llama-3.1-8B), so the warps of a block are all
   * the parallelism a short sequence gets: with 4 warps of one position at a time, attention was
   * 22% and 18% of those shapes' batch-1 step on an H200 (docs/benchmarks.md, "Where a decode
   * step's GPU time goes").
   */
  static int attentionWarps(ModelConfig c) {
    int group = c.numHeads() / c.numKvHeads();
    int perWarp = group * c.headDim() * Float.BYTES + 2 * group * Float.BYTES;
    return Math.max(1, Math.min(8, (ATT_SHARED_BYTES - runningStateBytes(c)) / perWarp));
  }

  /** attention's running state of a row: GROUP × HEAD_DIM values and five floats per head. */
  private static int runningStateBytes(ModelConfig c) {
    int group = c.numHeads() / c.numKvHeads();
    return group * c.headDim() * Float.BYTES + 5 * group * Float.BYTES;
  }

  /**
   * Consecutive positions an attention warp takes at once (kernels.cu's ATT_POS): their keys and
   * values sit in registers together ({@code 2 · ATT_POS · HEAD_DIM / 32} floats a lane beside the
   * query and accumulator's {@code 2 · GROUP · HEAD_DIM / 32}), so fewer as the group grows.
   */
  static int attentionPositions(ModelConfig c) {
    int group = c.numHeads() / c.numKvHeads();
    return group <= 4 ? 4 : group <= 8 ? 2 : 1;
  }

  /**
   * Blocks of {@link #QKV_THREADS} per row for {@code qkv_rope_cache}: a warp per head (q, k and v
   * heads), so that a batch-1 step spreads over several SMs (one block of 4 warps took 4.4 µs a
   * layer on an H200 for the Qwen3-1.7B shape's 32 heads).
   */
  static int qkvBlocks(ModelConfig c) {
    int heads = c.numHeads() + 2 * c.numKvHeads(), warps = QKV_THREADS / 32;
    return (heads + warps - 1) / warps;
  }

  /**
   * Blocks of {@link #ELEMENT_THREADS} per row for {@code silu_mul} over {@code inter} outputs:
   * about four outputs a thread, so that a batch-1 step spreads over several SMs (one block was 11%
   * of the batch-1 step on an H200).
   */
  static int siluBlocks(int inter) {
    return Math.max(1, (inter + 4 * ELEMENT_THREADS - 1) / (4 * ELEMENT_THREADS));
  }

  /** The full source for {@code c} with KV blocks of {@code blockSize} positions. */
  public static String generate(ModelConfig c, int blockSize) {
    if (c.headDim() % 2 != 0) throw new IllegalArgumentException("odd head_dim " + c.headDim());
    if (c.headDim() > 1024) throw new IllegalArgumentException("head_dim over 1024");
    int group = c.numHeads() / c.numKvHeads();
    int perWarp = group * c.headDim() * Float.BYTES + 2 * group * Float.BYTES;
    if (runningStateBytes(c) + perWarp > ATT_SHARED_BYTES)
      throw new IllegalArgumentException(
          "attention group of " + group + " heads × " + c.headDim() + " too large for one block");
    return prelude(c, blockSize) + BODY;
  }

  static String prelude(ModelConfig c, int blockSize) {
    return "// generated for "
        + c.architecture()
        + "\n#define HEAD_DIM "
        + c.headDim()
        + "\n#define N_HEADS "
        + c.numHeads()
        + "\n#define N_KV_HEADS "
        + c.numKvHeads()
        + "\n#define GROUP "
        + c.numHeads() / c.numKvHeads()
        + "\n#define KV_BLOCK "
        + blockSize
        + "\n#define ATT_WARPS "
        + attentionWarps(c)
        + "\n#define ATT_POS "
        + attentionPositions(c)
        + "\n#define ATT_PART "
        + ATT_PART
        + "\n#define HAS_QKV_BIAS "
        + (c.attentionBias() ? 1 : 0)
        + "\n#define HAS_QK_NORM "
        + (c.qkNorm() ? 1 : 0)
        + "\n#ifndef INFINITY\n#define INFINITY __int_as_float(0x7f800000)\n#endif\n"
        // NVRTC compiles without headers; redeclaring size_t as the type of sizeof is valid C++
        // whether or not a header already did (the emulator's does)
        + "typedef decltype(sizeof(int)) size_t;\n";
  }

  /** Where compiled kernels are cached: {@code troupe.worker.compute.cuda-kernel-cache}. */
  static Path cacheDir() {
    return ComputeSettings.jvm().kernelCache();
  }

  private static String readBody() {
    return read("kernels.cu") + read("training.cu");
  }

  private static String read(String name) {
    try (InputStream in = KernelSource.class.getResourceAsStream(name)) {
      if (in == null) throw new IllegalStateException(name + " missing from the classpath");
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
