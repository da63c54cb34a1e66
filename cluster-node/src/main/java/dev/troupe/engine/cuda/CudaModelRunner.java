package dev.troupe.engine.cuda;

import dev.troupe.engine.LoraAdapter;
import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.ModelRunner;
import dev.troupe.engine.model.ModelLoadException;
import dev.troupe.engine.model.RopeTables;
import dev.troupe.engine.model.WeightSource;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The decoder forward (Llama, Mistral, Qwen2, Qwen3) on a GPU: BF16 weights in device memory, a
 * paged BF16 KV cache in device memory, and one pass per step over every chunk of the batch
 * (prefill chunks and decode tokens mixed), as the CPU runner does it.
 *
 * <p>Per layer: {@code add_rmsnorm} (residual add fused with RMSNorm, output BF16) → q/k/v product
 * (cuBLAS, BF16 in, FP32 accumulate) → {@code qkv_rope_cache} (bias, q/k norm, RoPE, K/V written to
 * the paged cache) → {@code attention} (paged, GQA, causal over the cached prefix and the chunk) →
 * o product → {@code add_rmsnorm} → gate/up product → {@code silu_mul} → down product; LoRA rows
 * add {@code scale·B(A x)} after each product. The LM head runs only on rows whose logits are
 * wanted. The residual stream stays FP32. The step's metadata (tokens, positions, cache slots,
 * block tables, adapter slots) is one upload ({@link BatchPlan}).
 *
 * <p>Thread: confined to its owner's thread, like every {@link ModelRunner}.
 */
public final class CudaModelRunner implements ModelRunner {
  private static final Logger log = LoggerFactory.getLogger(CudaModelRunner.class);

  /** Logit rows computed per LM-head product (prompt-logprob chunks go in pieces). */
  static final int LOGIT_PIECE = 256;

  private final Gpu gpu;
  private final ModelConfig cfg;
  private final int blockSize, numBlocks, ropePositions;
  private final int hidden, headDim, qDim, kvDim, qkvDim, inter, vocab;
  private final CudaWeights w;
  private final CudaLora lora;
  private final long[] kCache, vCache;
  private final long ropeCos, ropeSin;
  private final long blockBytes;
  // work buffers, sized for `capacity` token rows
  private int capacity, metaInts, axRows, axRank;
  private long x, h, qkv, q, attn, y, gu, a, meta, ax, logits;
  private final ByteBuffer hostLogits;
  private long hostNanos;
  private final long sampleWork; // [LOGIT_PIECE, vocab] fp32: device sampling's scratch
  private boolean closed;

  private CudaModelRunner(
      Gpu gpu,
      ModelConfig cfg,
      WeightSource weights,
      int blockSize,
      int fixedBlocks,
      double memoryUtilization,
      int maxBatchTokens) {
    if (blockSize < 1) throw new IllegalArgumentException("blockSize must be >= 1");
    this.gpu = gpu;
    this.cfg = cfg;
    this.blockSize = blockSize;
    this.hidden = cfg.hiddenSize();
    this.headDim = cfg.headDim();
    this.qDim = cfg.numHeads() * headDim;
    this.kvDim = cfg.numKvHeads() * headDim;
    this.qkvDim = qDim + 2 * kvDim;
    this.inter = cfg.intermediateSize();
    this.vocab = cfg.vocabSize();
    gpu.loadKernels(KernelSource.generate(cfg, blockSize), KernelSource.KERNELS);
    this.w = new CudaWeights(gpu, cfg, weights);
    this.lora = new CudaLora(gpu, cfg);
    ensureCapacity(Math.max(1, maxBatchTokens));
    this.logits = gpu.alloc((long) LOGIT_PIECE * vocab * 4);
    // device sampling's scratch rows, before the KV cache takes what is left
    this.sampleWork = gpu.alloc((long) LOGIT_PIECE * vocab * 4);
    this.hostLogits =
        ByteBuffer.allocateDirect(LOGIT_PIECE * vocab * 4).order(ByteOrder.LITTLE_ENDIAN);
    this.blockBytes = (long) blockSize * kvDim * 2;
    long perBlock = 2L * cfg.numLayers() * blockBytes;
    int ropeMax = cfg.maxPositionEmbeddings();
    long ropeBytes = 2L * ropeMax * (headDim / 2) * 4;
    if (fixedBlocks > 0) numBlocks = fixedBlocks;
    else {
      long total = gpu.totalMemory(), free = gpu.freeMemory();
      long budget = (long) (memoryUtilization * total) - (total - free) - ropeBytes;
      numBlocks = (int) Math.min(Integer.MAX_VALUE, budget / perBlock);
      if (numBlocks < 1)
        throw new ModelLoadException(
            String.format(
                "no room for a KV cache on %s: weights %d MiB, %d MiB of %d MiB free, "
                    + "--gpu-memory-utilization %.2f",
                gpu.describe(), w.bytes >> 20, free >> 20, total >> 20, memoryUtilization));
    }
    this.ropePositions = (int) Math.min(ropeMax, (long) numBlocks * blockSize);
    this.kCache = new long[cfg.numLayers()];
    this.vCache = new long[cfg.numLayers()];
    for (int i = 0; i < kCache.length; i++) {
      kCache[i] = gpu.alloc((long) numBlocks * blockBytes);
      vCache[i] = gpu.alloc((long) numBlocks * blockBytes);
    }
    float[][] rope = RopeTables.of(cfg).table(ropePositions);
    ropeCos = uploadFloats(rope[0]);
    ropeSin = uploadFloats(rope[1]);
    log.info(
        "{}: weights {} MiB (BF16), KV cache {} blocks × {} positions = {} MiB (BF16), work buffers for {} tokens",
        gpu.describe(),
        w.bytes >> 20,
        numBlocks,
        blockSize,
        (long) numBlocks * perBlock >> 20,
        capacity);
  }

  /**
   * Loads {@code weights} onto {@code gpu} (it becomes the runner's; closed with it).
   *
   * @param numBlocks KV cache blocks; 0 = as many as {@code memoryUtilization} of the GPU's memory
   *     leaves after the weights and work buffers (vLLM's {@code --gpu-memory-utilization})
   * @param maxBatchTokens tokens per step the work buffers are sized for (larger steps grow them)
   */
  public static CudaModelRunner load(
      Gpu gpu,
      ModelConfig cfg,
      WeightSource weights,
      int blockSize,
      int numBlocks,
      double memoryUtilization,
      int maxBatchTokens) {
    try {
      return new CudaModelRunner(
          gpu, cfg, weights, blockSize, numBlocks, memoryUtilization, maxBatchTokens);
    } catch (RuntimeException | Error e) {
      gpu.close();
      throw e;
    }
  }

  private long uploadFloats(float[] v) {
    long p = gpu.alloc((long) v.length * 4);
    ByteBuffer b = ByteBuffer.allocateDirect(v.length * 4).order(ByteOrder.LITTLE_ENDIAN);
    b.asFloatBuffer().put(v);
    gpu.upload(p, b);
    return p;
  }

  private void ensureCapacity(int rows) {
    if (rows <= capacity) return;
    for (long p : new long[] {x, h, qkv, q, attn, y, gu, a}) gpu.free(p);
    capacity = Math.max(rows, capacity * 2);
    long c = capacity;
    x = gpu.alloc(c * hidden * 4);
    h = gpu.alloc(c * hidden * 2);
    qkv = gpu.alloc(c * qkvDim * 4);
    q = gpu.alloc(c * qDim * 4);
    attn = gpu.alloc(c * qDim * 2);
    y = gpu.alloc(c * hidden * 4);
    gu = gpu.alloc(c * 2 * inter * 4);
    a = gpu.alloc(c * inter * 2);
  }

  private void ensureMeta(int ints) {
    if (ints <= metaInts) return;
    gpu.free(meta);
    metaInts = Math.max(ints, metaInts * 2);
    meta = gpu.alloc((long) metaInts * 4);
  }

  private void ensureAx(int rows, int rank) {
    if (rows <= axRows && rank <= axRank) return;
    gpu.free(ax);
    axRows = Math.max(rows, capacity);
    axRank = Math.max(rank, axRank);
    ax = gpu.alloc((long) axRows * axRank * 4);
  }

  @Override
  public ModelConfig config() {
    return cfg;
  }

  @Override
  public int blockSize() {
    return blockSize;
  }

  @Override
  public int numBlocks() {
    return numBlocks;
  }

  /**
   * Host time of the last {@link #forward}: its wall time minus the time spent waiting for the
   * device (benchmarks: the host's share of a step).
   */
  public long lastHostNanos() {
    return hostNanos;
  }

  /** The device, for logs. */
  public String device() {
    return gpu.describe();
  }

  @Override
  public void registerAdapter(int id, LoraAdapter adapter) {
    lora.register(id, adapter);
  }

  @Override
  public void removeAdapter(int id) {
    lora.removeAdapter(id);
  }

  @Override
  public void copyBlock(int src, int dst) {
    checkBlock(src);
    checkBlock(dst);
    for (int l = 0; l < kCache.length; l++) {
      gpu.copy(kCache[l] + dst * blockBytes, kCache[l] + src * blockBytes, blockBytes);
      gpu.copy(vCache[l] + dst * blockBytes, vCache[l] + src * blockBytes, blockBytes);
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
    long start = System.nanoTime();
    BatchPlan s = layers(batch);
    int R = s.logitRows().length;
    float[][] all = new float[R][];
    long waited = 0; // in downloads: the step's GPU work, then the logits copy
    FloatBuffer fb = hostLogits.duplicate().clear().order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer();
    for (int r0 = 0; r0 < R; r0 += LOGIT_PIECE) {
      int n = Math.min(LOGIT_PIECE, R - r0);
      gpu.gemm(w.lmHead, h + (long) r0 * hidden * 2, logits, vocab, hidden, n, false, 0f);
      hostLogits.clear().limit(n * vocab * 4);
      long d0 = System.nanoTime();
      gpu.download(logits, hostLogits); // waits for the step's GPU work, then copies
      waited += System.nanoTime() - d0;
      for (int r = 0; r < n; r++) {
        float[] row = new float[vocab];
        fb.get(r * vocab, row);
        all[r0 + r] = row;
      }
    }
    List<float[][]> out = new ArrayList<>(batch.size());
    int r = 0;
    for (int n : s.logitCounts()) {
      out.add(java.util.Arrays.copyOfRange(all, r, r + n));
      r += n;
    }
    // host time of the step: its wall time minus the waits for the device (packing, launches,
    // unpacking logits into Java arrays)
    hostNanos = System.nanoTime() - start - waited;
    return out;
  }

  /**
   * Runs one step and samples each chunk's next token on the device ({@link DeviceSampler}): only
   * the tokens (and the requested raw logprobs) come back to the host, never a logits row.
   *
   * @param rows per chunk, its sampling state; no chunk may ask for all logits
   */
  public List<DeviceSampler.Result> forwardSample(
      List<SequenceChunk> batch, List<DeviceSampler.Row> rows) {
    if (closed) throw new IllegalStateException("runner closed");
    if (rows.size() != batch.size())
      throw new IllegalArgumentException(batch.size() + " chunks but " + rows.size() + " rows");
    for (SequenceChunk c : batch)
      if (c.allLogits())
        throw new IllegalArgumentException("a chunk asking for all logits cannot be sampled here");
    if (batch.isEmpty()) return List.of();
    long start = System.nanoTime();
    // the rows' parameters go up first, so nothing waits between the layers and the sampling
    try (DeviceSampler.Batch sampling = new DeviceSampler.Batch(gpu, rows)) {
      layers(batch);
      for (int r0 = 0; r0 < rows.size(); r0 += LOGIT_PIECE) {
        int n = Math.min(LOGIT_PIECE, rows.size() - r0);
        gpu.gemm(w.lmHead, h + (long) r0 * hidden * 2, logits, vocab, hidden, n, false, 0f);
        sampling.launch(logits, sampleWork, vocab, r0, n, DeviceSampler.THREADS);
      }
      long d0 = System.nanoTime();
      List<DeviceSampler.Result> out = sampling.results();
      hostNanos = d0 - start; // everything before the wait is host work
      return out;
    }
  }

  /** Everything of a step up to the final norm of its logit rows (left in {@code h}). */
  private BatchPlan layers(List<SequenceChunk> batch) {
    BatchPlan s = BatchPlan.of(batch, blockSize, numBlocks, vocab, lora::slot);
    for (int p : s.positions())
      if (p >= ropePositions)
        throw new IllegalArgumentException(
            "position " + p + " beyond the model's " + ropePositions + " positions");
    int T = s.rows();
    ensureCapacity(T);
    ensureMeta(s.packedInts());
    gpu.upload(meta, s.pack());
    long tokens = meta + 4L * s.offTokens(), positions = meta + 4L * s.offPositions();
    long slots = meta + 4L * s.offSlots(), tableOff = meta + 4L * s.offTableOffsets();
    long adapterSlots = meta + 4L * s.offAdapters(), logitRows = meta + 4L * s.offLogitRows();
    long tables = meta + 4L * s.offTables();
    if (s.anyAdapter()) ensureAx(T, lora.maxRank);
    float eps = (float) cfg.rmsNormEps();
    float scale = (float) (1.0 / Math.sqrt(headDim));

    gpu.launch("embed_rows", T, 1, KernelSource.ELEMENT_THREADS, tokens, w.embed, x, hidden);
    for (int li = 0; li < w.layers.length; li++) {
      CudaWeights.Layer l = w.layers[li];
      // attention block (the previous layer's MLP output y joins the residual here)
      norm(l.attnNorm(), li == 0 ? 0 : y, 0, T, eps);
      gpu.gemm(l.qkv(), h, qkv, qkvDim, hidden, T, false, 0f);
      loraAdd(s, li, CudaLora.Q, h, hidden, qkv, qkvDim, 0, adapterSlots, T);
      loraAdd(s, li, CudaLora.K, h, hidden, qkv, qkvDim, qDim, adapterSlots, T);
      loraAdd(s, li, CudaLora.V, h, hidden, qkv, qkvDim, qDim + kvDim, adapterSlots, T);
      gpu.launch(
          "qkv_rope_cache",
          T,
          1,
          KernelSource.QKV_THREADS,
          qkv,
          l.qkvBias(),
          l.qNorm(),
          l.kNorm(),
          positions,
          slots,
          ropeCos,
          ropeSin,
          q,
          kCache[li],
          vCache[li],
          eps);
      gpu.launch(
          "attention",
          T,
          cfg.numKvHeads(),
          32 * KernelSource.attentionWarps(cfg),
          q,
          kCache[li],
          vCache[li],
          positions,
          tables,
          tableOff,
          cfg.slidingWindow(),
          scale,
          attn);
      gpu.gemm(l.o(), attn, y, hidden, qDim, T, false, 0f);
      loraAdd(s, li, CudaLora.O, attn, qDim, y, hidden, 0, adapterSlots, T);
      // MLP block
      norm(l.mlpNorm(), y, 0, T, eps);
      gpu.gemm(l.gateUp(), h, gu, 2 * inter, hidden, T, false, 0f);
      loraAdd(s, li, CudaLora.GATE, h, hidden, gu, 2 * inter, 0, adapterSlots, T);
      loraAdd(s, li, CudaLora.UP, h, hidden, gu, 2 * inter, inter, adapterSlots, T);
      gpu.launch("silu_mul", T, 1, KernelSource.ELEMENT_THREADS, gu, a, inter);
      gpu.gemm(l.down(), a, y, hidden, inter, T, false, 0f);
      loraAdd(s, li, CudaLora.DOWN, a, inter, y, hidden, 0, adapterSlots, T);
    }
    // final norm only on the logit rows (their residual gets the last MLP output), then the LM head
    int R = s.logitRows().length;
    norm(w.finalNorm, y, logitRows, R, eps);
    return s;
  }

  /** x[row] += add[row] (add ≠ 0), h[r] = bf16(rmsnorm(x[row]) · weight), row = rows[r] or r. */
  private void norm(long weight, long add, long rows, int n, float eps) {
    gpu.launch(
        "add_rmsnorm", n, 1, KernelSource.NORM_THREADS, x, add, weight, h, rows, hidden, eps);
  }

  private void loraAdd(
      BatchPlan s,
      int li,
      int module,
      long in,
      int inDim,
      long out,
      int outStride,
      int outOff,
      long adapterSlots,
      int T) {
    if (!s.anyAdapter()) return;
    int outDim = lora.inOut(module)[1];
    gpu.launch(
        "lora_shrink",
        T,
        1,
        KernelSource.LORA_THREADS,
        in,
        inDim,
        adapterSlots,
        lora.aPtrs(li, module),
        lora.ranks(),
        ax,
        axRank);
    gpu.launch(
        "lora_expand",
        T,
        (outDim + KernelSource.ELEMENT_THREADS - 1) / KernelSource.ELEMENT_THREADS,
        KernelSource.ELEMENT_THREADS,
        ax,
        axRank,
        adapterSlots,
        lora.bPtrs(li, module),
        lora.ranks(),
        lora.scales(),
        out,
        outStride,
        outOff,
        outDim);
  }

  @Override
  public void close() {
    if (closed) return;
    closed = true;
    try {
      gpu.synchronize();
    } finally {
      gpu.close(); // frees everything the context holds
    }
  }
}
