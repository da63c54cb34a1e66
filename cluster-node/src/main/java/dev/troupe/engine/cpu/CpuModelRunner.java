package dev.troupe.engine.cpu;

import dev.troupe.engine.KvLayout;
import dev.troupe.engine.LoraAdapter;
import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.ModelRunner;
import dev.troupe.engine.model.DType;
import dev.troupe.engine.model.LayerStep;
import dev.troupe.engine.model.ModelLoadException;
import dev.troupe.engine.model.Quantization;
import dev.troupe.engine.model.TransformerLayout;
import dev.troupe.engine.model.WeightSource;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The decoder-only transformer forward (Llama, Mistral, Qwen2, Qwen3) on this machine's CPU, over a
 * paged KV cache.
 *
 * <p>Weights stay in the dtype they are served in: a BF16 or F16 checkpoint keeps 2 bytes per
 * weight on the Java heap ({@link Matrix}); every product widens them to FP32 in registers and
 * accumulates in FP32. One {@link #forward} runs every chunk of the batch together: all tokens of
 * all sequences are stacked into {@code x [T, H]} and each layer is one pass over its {@link
 * LayerStep}s by a persistent thread team ({@link Forward}, {@link Team}): products of up to 64
 * rows on Java Vector API kernels that read each weight row once for all rows, prefill-sized ones
 * on OpenBLAS GEMM over FP32 tiles ({@link Blas}), attention, norms, RoPE and SwiGLU partitioned by
 * rows. Names, shapes, steps and rotary tables come from the shared model definition ({@link
 * TransformerLayout}).
 *
 * <p>KV cache: per layer, {@code numBlocks · blockSize} slots of {@code [numKvHeads, headDim]} FP32
 * for keys and for values, on the heap; position {@code p} of a sequence lives in slot {@code
 * blockTable[p / bs] · bs + p % bs}.
 *
 * <p>Thread: confined to its owner's thread, like every {@link ModelRunner}.
 */
public final class CpuModelRunner implements ModelRunner {
  private static final Logger log = LoggerFactory.getLogger(CpuModelRunner.class);

  /** Every {@link LayerStep} {@link Forward} implements. */
  private static final Set<LayerStep> SUPPORTED_STEPS = EnumSet.allOf(LayerStep.class);

  private final ModelConfig cfg;
  private final int blockSize;
  private final int numBlocks;
  private final Model model;
  private final Forward forward;
  private final Map<Integer, Lora> adapters = new HashMap<>();
  private boolean closed;

  private CpuModelRunner(
      ModelConfig cfg,
      WeightSource w,
      DType dtype,
      Quantization quantization,
      int numBlocks,
      int blockSize) {
    if (numBlocks < 1 || blockSize < 1)
      throw new IllegalArgumentException("numBlocks and blockSize must be >= 1");
    this.cfg = cfg;
    this.numBlocks = numBlocks;
    this.blockSize = blockSize;
    long cacheFloats = (long) numBlocks * blockSize * cfg.numKvHeads() * cfg.headDim();
    if (cacheFloats > Integer.MAX_VALUE - 8)
      throw new IllegalArgumentException(
          "KV cache of " + numBlocks + " blocks × " + blockSize + " too large for one layer array");
    TransformerLayout layout = TransformerLayout.of(cfg);
    if (!SUPPORTED_STEPS.containsAll(layout.steps()))
      throw new ModelLoadException(
          cfg.architecture()
              + ": layer steps "
              + layout.steps()
              + " not all supported by the CPU runner");
    layout.check(w);
    this.model = new Model(cfg, w, dtype, quantization == Quantization.Q8_0, cacheFloats);
    this.forward = new Forward(model, Team.shared(), blockSize);
    log.info(
        String.format(
            Locale.ROOT,
            "CPU runner: %s weights, %d MB on the heap; KV cache %d MB; %s kernels",
            quantization == Quantization.NONE
                ? dtype
                : quantization.flag() + " (from " + dtype + ")",
            model.weightBytes() >> 20,
            2L * cfg.numLayers() * cacheFloats * Float.BYTES >> 20,
            VectorSupport.AVAILABLE ? "Vector API" : "plain-Java"));
  }

  /**
   * Loads the weights in {@code dtype} (checked against the config first: BF16 or F16 are kept as
   * stored, or rounded to nearest even from FP32; FP32 is widened if stored in 16 bits) and
   * allocates the KV cache. The weight source may be closed afterwards.
   */
  public static CpuModelRunner load(
      ModelConfig cfg, WeightSource weights, DType dtype, int numBlocks, int blockSize) {
    return load(cfg, weights, dtype, Quantization.NONE, numBlocks, blockSize);
  }

  /**
   * {@link #load(ModelConfig, WeightSource, DType, int, int)}, the matrices {@code quantization}'s
   * way ({@link Quantization#Q8_0}: 8-bit, quantized from the values in {@code dtype}).
   */
  public static CpuModelRunner load(
      ModelConfig cfg,
      WeightSource weights,
      DType dtype,
      Quantization quantization,
      int numBlocks,
      int blockSize) {
    try {
      return new CpuModelRunner(cfg, weights, dtype, quantization, numBlocks, blockSize);
    } catch (OutOfMemoryError e) {
      throw new ModelLoadException(
          "not enough Java heap to load the model from "
              + weights.origin()
              + " as "
              + dtype
              + " (raise -Xmx)",
          e);
    }
  }

  /** {@link #load(ModelConfig, WeightSource, DType, int, int)} keeping the embedding's dtype. */
  public static CpuModelRunner load(
      ModelConfig cfg, WeightSource weights, int numBlocks, int blockSize) {
    return load(cfg, weights, weights.info(TransformerLayout.EMBED).dtype(), numBlocks, blockSize);
  }

  @Override
  public ModelConfig config() {
    return cfg;
  }

  /** The dtype the weights are held and read in (with {@link #quantization}: quantized from). */
  public DType dtype() {
    return model.dtype;
  }

  /** Whether the matrices are 8-bit ({@link Quantization#Q8_0}) or as {@link #dtype}. */
  public Quantization quantization() {
    return model.quantized ? Quantization.Q8_0 : Quantization.NONE;
  }

  /**
   * Whether prompt rows run on oneDNN's BF16 matmul (BF16 weights, every width a multiple of 32,
   * the CPU's BF16 dot products through oneDNN, {@code troupe.worker.compute.bf16-gemm} on);
   * otherwise every row takes the FP32 path.
   */
  public boolean promptRowsOnOneDnn() {
    return forward.splitsPrompt();
  }

  /**
   * The fewest generated rows a step runs on oneDNN (with the kernels' bits: {@code
   * troupe.worker.compute.bf16-gemm-decode-rows}), or 0 where generated rows take the FP32 path,
   * their activations unrounded.
   */
  public int generatedRowsOnOneDnnFrom() {
    return forward.decodeRows();
  }

  /** Bytes of weights on the heap. */
  public long weightBytes() {
    return model.weightBytes();
  }

  @Override
  public int blockSize() {
    return blockSize;
  }

  @Override
  public int numBlocks() {
    return numBlocks;
  }

  @Override
  public void registerAdapter(int id, LoraAdapter adapter) {
    if (id <= 0) throw new IllegalArgumentException("adapter id must be > 0 (0 is the base model)");
    adapters.put(id, Lora.of(adapter, cfg));
  }

  @Override
  public void removeAdapter(int id) {
    adapters.remove(id);
  }

  @Override
  public void copyBlock(int src, int dst) {
    checkBlock(src);
    checkBlock(dst);
    int n = blockSize * model.kvDim;
    for (Model.Layer l : model.layers) {
      System.arraycopy(l.kCache(), src * n, l.kCache(), dst * n, n);
      System.arraycopy(l.vCache(), src * n, l.vCache(), dst * n, n);
    }
  }

  @Override
  public KvLayout kvLayout() {
    return KvLayout.of("cpu", cfg, blockSize, "float32");
  }

  @Override
  public byte[] exportBlocks(int[] blocks) {
    for (int b : blocks) checkBlock(b);
    int n = blockSize * model.kvDim;
    ByteBuffer out =
        ByteBuffer.allocate(Math.toIntExact(blocks.length * kvLayout().blockBytes()))
            .order(ByteOrder.LITTLE_ENDIAN);
    FloatBuffer f = out.asFloatBuffer();
    for (int b : blocks)
      for (Model.Layer l : model.layers) {
        f.put(l.kCache(), b * n, n);
        f.put(l.vCache(), b * n, n);
      }
    return out.array();
  }

  @Override
  public void importBlocks(int[] blocks, byte[] data) {
    for (int b : blocks) checkBlock(b);
    if (data.length != blocks.length * kvLayout().blockBytes())
      throw new IllegalArgumentException(
          data.length + " bytes are not " + blocks.length + " blocks of this layout");
    int n = blockSize * model.kvDim;
    FloatBuffer f = ByteBuffer.wrap(data).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer();
    for (int b : blocks)
      for (Model.Layer l : model.layers) {
        f.get(l.kCache(), b * n, n);
        f.get(l.vCache(), b * n, n);
      }
  }

  private void checkBlock(int b) {
    if (b < 0 || b >= numBlocks)
      throw new IllegalArgumentException("block " + b + " out of [0, " + numBlocks + ")");
  }

  @Override
  public List<float[][]> forward(List<SequenceChunk> batch) {
    if (closed) throw new IllegalStateException("runner closed");
    if (batch.isEmpty()) return List.of();
    Step s =
        Step.of(batch, model.vocab, blockSize, numBlocks, this::adapter, forward.splitsPrompt());
    float[][] logits = forward.run(s);
    List<float[][]> out = new ArrayList<>(batch.size());
    int r = 0;
    for (SequenceChunk c : batch) {
      int n = c.allLogits() ? c.tokens().length : 1;
      out.add(java.util.Arrays.copyOfRange(logits, r, r + n));
      r += n;
    }
    return out;
  }

  private Lora adapter(int id) {
    Lora a = adapters.get(id);
    if (a == null) throw new IllegalArgumentException("unknown adapter id " + id);
    return a;
  }

  @Override
  public void close() {
    if (closed) return;
    closed = true;
    adapters.clear();
    forward.close();
  }
}
