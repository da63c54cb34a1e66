package dev.troupe.engine.cuda;

import dev.troupe.engine.DeviceInfo;
import dev.troupe.engine.DeviceSampling;
import dev.troupe.engine.KvLayout;
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
 * <p>Decode-only steps of up to {@value DecodeGraphs#MAX_SIZE} sequences run as CUDA graphs ({@link
 * DecodeGraphs}) unless they are turned off (vLLM's {@code --enforce-eager}): the batch is padded
 * to a capture size, the padding rows writing their K/V into a scratch block past the cache's last,
 * and the step's launches are captured once per size and replayed after.
 *
 * <p>Thread: confined to its owner's thread, like every {@link ModelRunner}.
 */
public final class CudaModelRunner implements ModelRunner, DeviceSampling {
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
  private final long reserved; // kept out of the KV cache for a trainer on this runner
  // work buffers, sized for `capacity` token rows
  private int capacity, metaInts, axRows, axRank;
  private long x, h, qkv, q, attn, y, gu, a, meta, ax, logits;
  private long attnPart, attnPartBytes; // attention's partition states when split over blocks
  private final ByteBuffer hostLogits;
  private ByteBuffer hostMeta; // the step's packed metadata, reused from step to step
  private final DeviceSampler.Buffers samplerBuffers;
  private long hostNanos;
  private final long sampleWork; // [LOGIT_PIECE, vocab] fp32: device sampling's scratch
  private int samplerThreads = DeviceSampler.THREADS;
  private final DecodeGraphs graphs;
  private boolean useGraphs;
  private final int scratchBlock; // = numBlocks: the padding rows' K/V, no sequence's
  private boolean closed;
  private final List<CudaTrainer> trainers = new ArrayList<>(); // closed before the runner

  private CudaModelRunner(
      Gpu gpu,
      ModelConfig cfg,
      WeightSource weights,
      int blockSize,
      int fixedBlocks,
      double memoryUtilization,
      int maxBatchTokens,
      boolean cudaGraphs,
      long reservedBytes) {
    if (blockSize < 1) throw new IllegalArgumentException("blockSize must be >= 1");
    this.gpu = gpu;
    this.useGraphs = cudaGraphs;
    this.cfg = cfg;
    this.blockSize = blockSize;
    this.reserved = Math.max(0, reservedBytes);
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
    this.samplerBuffers = new DeviceSampler.Buffers(gpu);
    this.hostLogits =
        ByteBuffer.allocateDirect(LOGIT_PIECE * vocab * 4).order(ByteOrder.LITTLE_ENDIAN);
    this.blockBytes = (long) blockSize * kvDim * 2;
    long perBlock = 2L * cfg.numLayers() * blockBytes;
    int ropeMax = cfg.maxPositionEmbeddings();
    long ropeBytes = 2L * ropeMax * (headDim / 2) * 4;
    if (fixedBlocks > 0) numBlocks = fixedBlocks;
    else {
      long total = gpu.totalMemory(), free = gpu.freeMemory();
      long budget = (long) (memoryUtilization * total) - (total - free) - ropeBytes - reserved;
      // one block fewer than fits: the scratch block
      numBlocks = (int) Math.min(Integer.MAX_VALUE, budget / perBlock - 1);
      if (numBlocks < 1)
        throw new ModelLoadException(
            String.format(
                "no room for a KV cache on %s: weights %d MiB, %d MiB of %d MiB free, "
                    + "%d MiB kept for training, --gpu-memory-utilization %.2f",
                gpu.describe(),
                w.bytes >> 20,
                free >> 20,
                total >> 20,
                reserved >> 20,
                memoryUtilization));
    }
    this.scratchBlock = numBlocks;
    this.graphs = new DecodeGraphs(gpu);
    this.ropePositions = (int) Math.min(ropeMax, (long) numBlocks * blockSize);
    this.kCache = new long[cfg.numLayers()];
    this.vCache = new long[cfg.numLayers()];
    for (int i = 0; i < kCache.length; i++) {
      kCache[i] = gpu.alloc((long) (numBlocks + 1) * blockBytes);
      vCache[i] = gpu.alloc((long) (numBlocks + 1) * blockBytes);
    }
    float[][] rope = RopeTables.of(cfg).table(ropePositions);
    ropeCos = uploadFloats(rope[0]);
    ropeSin = uploadFloats(rope[1]);
    log.info(
        "{}: weights {} MiB (BF16), KV cache {} blocks × {} positions = {} MiB (BF16), work buffers for {} tokens, {} MiB kept for training",
        gpu.describe(),
        w.bytes >> 20,
        numBlocks,
        blockSize,
        (long) numBlocks * perBlock >> 20,
        capacity,
        reserved >> 20);
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
    return load(gpu, cfg, weights, blockSize, numBlocks, memoryUtilization, maxBatchTokens, true);
  }

  /**
   * {@link #load(Gpu, ModelConfig, WeightSource, int, int, double, int)}, with decode-only steps
   * run as CUDA graphs or not ({@code cudaGraphs} false: vLLM's {@code --enforce-eager}).
   */
  public static CudaModelRunner load(
      Gpu gpu,
      ModelConfig cfg,
      WeightSource weights,
      int blockSize,
      int numBlocks,
      double memoryUtilization,
      int maxBatchTokens,
      boolean cudaGraphs) {
    return load(
        gpu, cfg, weights, blockSize, numBlocks, memoryUtilization, maxBatchTokens, cudaGraphs, 0);
  }

  /**
   * As above, keeping {@code reservedBytes} of the {@code memoryUtilization} share out of the KV
   * cache for a trainer on this runner ({@link #trainer}; {@link CudaTrainer#reservedBytes}), so
   * that serving and training together stay within {@code --gpu-memory-utilization}.
   */
  public static CudaModelRunner load(
      Gpu gpu,
      ModelConfig cfg,
      WeightSource weights,
      int blockSize,
      int numBlocks,
      double memoryUtilization,
      int maxBatchTokens,
      boolean cudaGraphs,
      long reservedBytes) {
    try {
      return new CudaModelRunner(
          gpu,
          cfg,
          weights,
          blockSize,
          numBlocks,
          memoryUtilization,
          maxBatchTokens,
          cudaGraphs,
          reservedBytes);
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

  /** Room for attention's partition states: {@code rows × split} per query head. */
  private void ensureAttnPart(int rows, int split) {
    long bytes = split == 1 ? 0 : (long) rows * split * cfg.numHeads() * (headDim + 2) * 4;
    if (bytes <= attnPartBytes) return;
    gpu.free(attnPart);
    attnPartBytes = Math.max(bytes, attnPartBytes * 2);
    attnPart = gpu.alloc(attnPartBytes);
  }

  /**
   * Blocks per (row, KV head) for attention ({@code split} of kernels.cu): 1, or — for steps of at
   * most {@value #SPLIT_ROWS} rows, whose few blocks would leave most of a GPU idle on a long
   * context — the most partitions of {@link KernelSource#ATT_PART} positions a row of the step
   * spans, rounded up to a power of two (a graph is captured per value). A row's result is the same
   * either way (kernels.cu).
   */
  int attentionSplit(BatchPlan s) {
    if (s.rows() > SPLIT_ROWS) return 1;
    int most = 1, window = cfg.slidingWindow();
    for (int p : s.positions()) {
      int lo = window > 0 ? Math.max(0, p - window + 1) : 0;
      most = Math.max(most, p / KernelSource.ATT_PART - lo / KernelSource.ATT_PART + 1);
    }
    return most == 1 ? 1 : Integer.highestOneBit(most - 1) << 1;
  }

  /** Steps of at most this many rows may split attention over blocks ({@link #attentionSplit}). */
  static final int SPLIT_ROWS = 16;

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
   * Host time of the last {@link #forward} or {@link #forwardSample}: its wall time minus the time
   * spent waiting for the device (benchmarks: the host's share of a step).
   */
  public long lastHostNanos() {
    return hostNanos;
  }

  /**
   * Threads per row of the sampling kernel (a multiple of 32, at most {@value
   * DeviceSampler#THREADS}, the default): the CPU emulation runs every thread as a fiber, so its
   * tests use fewer.
   */
  void samplerThreads(int threads) {
    if (threads < 32 || threads > DeviceSampler.THREADS || threads % 32 != 0)
      throw new IllegalArgumentException(
          "threads: a multiple of 32 up to " + DeviceSampler.THREADS);
    samplerThreads = threads;
  }

  /**
   * Whether decode-only steps run as CUDA graphs from now on (false: every step eager, vLLM's
   * {@code --enforce-eager}; the graphs captured so far are kept). Benchmarks compare both.
   */
  public void useCudaGraphs(boolean on) {
    useGraphs = on;
  }

  /** Graphs captured and graph launches so far (tests, benchmarks). */
  long[] graphCounts() {
    return new long[] {graphs.captures(), graphs.replays()};
  }

  /** The device, for logs. */
  public String device() {
    return gpu.describe();
  }

  /** Bytes kept out of the KV cache for a trainer on this runner (0: none). */
  public long reservedBytes() {
    return reserved;
  }

  @Override
  public DeviceInfo deviceInfo() {
    return new DeviceInfo("cuda", gpu.ordinal(), gpu.name(), gpu.totalMemory());
  }

  /**
   * A trainer of LoRA adapters on this runner's GPU and base weights, which it reads and never
   * writes (no second copy of the model): for a node that serves and trains one model on one GPU.
   * Call it, and use the trainer, on this runner's thread between two steps (generation pauses for
   * a training step, as ART's shared mode); the runner closes it first when it closes. Its adapters
   * are served in memory: {@code registerAdapter(id, trainer.adapter(step))}. Its buffers come out
   * of what {@link #reservedBytes} kept from the KV cache ({@link CudaTrainer#reservedBytes}).
   */
  public CudaTrainer trainer(CudaTrainer.Adapter adapter, int maxTokens) {
    if (closed) throw new IllegalStateException("runner closed");
    trainers.removeIf(CudaTrainer::isClosed);
    CudaTrainer t = CudaTrainer.sharing(gpu, cfg, w, adapter, maxTokens);
    trainers.add(t);
    return t;
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

  @Override
  public KvLayout kvLayout() {
    return KvLayout.of("cuda", cfg, blockSize, "bfloat16");
  }

  /** Device to host, one block's keys then values per layer (a pinned-free staging buffer). */
  @Override
  public byte[] exportBlocks(int[] blocks) {
    for (int b : blocks) checkBlock(b);
    int per = Math.toIntExact(blockBytes);
    byte[] out = new byte[Math.toIntExact(blocks.length * 2L * kCache.length * blockBytes)];
    ByteBuffer stage = ByteBuffer.allocateDirect(per);
    int at = 0;
    for (int b : blocks)
      for (int l = 0; l < kCache.length; l++)
        for (long cache : new long[] {kCache[l], vCache[l]}) {
          stage.clear();
          gpu.download(cache + b * blockBytes, stage);
          stage.get(0, out, at, per);
          at += per;
        }
    return out;
  }

  @Override
  public void importBlocks(int[] blocks, byte[] data) {
    for (int b : blocks) checkBlock(b);
    int per = Math.toIntExact(blockBytes);
    if (data.length != blocks.length * 2L * kCache.length * blockBytes)
      throw new IllegalArgumentException(
          data.length + " bytes are not " + blocks.length + " blocks of this layout");
    ByteBuffer stage = ByteBuffer.allocateDirect(per);
    int at = 0;
    for (int b : blocks)
      for (int l = 0; l < kCache.length; l++)
        for (long cache : new long[] {kCache[l], vCache[l]}) {
          stage.clear();
          stage.put(data, at, per).flip();
          gpu.upload(cache + b * blockBytes, stage);
          at += per;
        }
  }

  private void checkBlock(int b) {
    if (b < 0 || b >= numBlocks)
      throw new IllegalArgumentException("block " + b + " out of [0, " + numBlocks + ")");
  }

  @Override
  public List<float[][]> forward(List<SequenceChunk> batch) {
    boolean[] all = new boolean[batch.size()];
    java.util.Arrays.fill(all, true);
    return forwardSample(batch, all, List.of()).logits();
  }

  /**
   * Runs one step and samples rows on the device ({@link DeviceSampler}): only the tokens (and the
   * requested raw logprobs) come back, plus the logits of the chunks {@code hostLogits} names. The
   * rows' parameters go up before the layers run; the LM head runs in pieces of {@value
   * #LOGIT_PIECE} logit rows, each piece sampled (and its host rows copied) before the next.
   */
  @Override
  public Step forwardSample(List<SequenceChunk> batch, boolean[] hostLogits, List<Row> rows) {
    if (closed) throw new IllegalStateException("runner closed");
    int chunks = batch.size();
    if (hostLogits != null && hostLogits.length != chunks)
      throw new IllegalArgumentException(chunks + " chunks but " + hostLogits.length + " flags");
    if (chunks == 0) {
      if (!rows.isEmpty()) throw new IllegalArgumentException("rows without chunks");
      return new Step(List.of(), List.of());
    }
    long start = System.nanoTime();
    // logit rows: per chunk its last token, or every token of an allLogits chunk
    int[] firstLogit = new int[chunks + 1];
    for (int c = 0; c < chunks; c++) {
      SequenceChunk ch = batch.get(c);
      firstLogit[c + 1] = firstLogit[c] + (ch.allLogits() ? ch.tokens().length : 1);
    }
    // the rows in logit-row order, so each piece samples a contiguous range of them
    Integer[] order = new Integer[rows.size()];
    int[] source = new int[rows.size()];
    for (int i = 0; i < order.length; i++) {
      int c = rows.get(i).chunk();
      if (c >= chunks) throw new IllegalArgumentException("row " + i + ": no chunk " + c);
      order[i] = i;
      source[i] = firstLogit[c + 1] - 1;
    }
    java.util.Arrays.sort(order, java.util.Comparator.comparingInt(i -> source[i]));
    List<DeviceSampling.Params> sorted = new ArrayList<>(order.length);
    int[] sortedSource = new int[order.length];
    for (int j = 0; j < order.length; j++) {
      sorted.add(rows.get(order[j]).params());
      sortedSource[j] = source[order[j]];
    }
    BatchPlan plan = BatchPlan.of(batch, blockSize, numBlocks, vocab, lora::slot);
    for (int p : plan.positions())
      if (p >= ropePositions)
        throw new IllegalArgumentException(
            "position " + p + " beyond the model's " + ropePositions + " positions");
    int size = useGraphs && plan.decodeOnly() ? DecodeGraphs.sizeFor(chunks) : -1;
    if (size > 0 && sorted.size() <= size) {
      Step replayed = replay(plan, size, hostLogits, sorted, sortedSource, order, start);
      if (replayed != null) return replayed;
    }
    DeviceSampler.Batch sampling =
        sorted.isEmpty() ? null : new DeviceSampler.Batch(samplerBuffers, sorted, sortedSource);
    BatchPlan s = layers(plan);
    int total = s.logitRows().length;
    boolean[] wanted = new boolean[total];
    for (int c = 0; c < chunks; c++)
      if (hostLogits != null && hostLogits[c])
        java.util.Arrays.fill(wanted, firstLogit[c], firstLogit[c + 1], true);
    float[][] host = new float[total][];
    long waited = 0; // in downloads: the step's GPU work, then the copies
    int next = 0;
    for (int r0 = 0; r0 < total; r0 += LOGIT_PIECE) {
      int n = Math.min(LOGIT_PIECE, total - r0);
      gpu.gemm(w.lmHead, h + (long) r0 * hidden * 2, logits, vocab, hidden, n, false, 0f);
      int s0 = next;
      while (next < sortedSource.length && sortedSource[next] < r0 + n) next++;
      for (int a = s0; a < next; a += LOGIT_PIECE)
        sampling.launch(
            logits, sampleWork, vocab, a, Math.min(LOGIT_PIECE, next - a), r0, samplerThreads);
      for (int j = 0; j < n; ) {
        if (!wanted[r0 + j]) {
          j++;
          continue;
        }
        int e = j;
        while (e < n && wanted[r0 + e]) e++;
        long d0 = System.nanoTime();
        download(r0, j, e, host);
        waited += System.nanoTime() - d0;
        j = e;
      }
    }
    Result[] results = new Result[order.length];
    if (sampling != null) {
      long d0 = System.nanoTime();
      List<Result> got = sampling.results(); // waits for the step
      waited += System.nanoTime() - d0;
      for (int j = 0; j < order.length; j++) results[order[j]] = got.get(j);
    }
    List<float[][]> out = new ArrayList<>(chunks);
    for (int c = 0; c < chunks; c++)
      out.add(
          hostLogits != null && hostLogits[c]
              ? java.util.Arrays.copyOfRange(host, firstLogit[c], firstLogit[c + 1])
              : null);
    // host time of the step: its wall time minus the waits for the device (packing, launches,
    // unpacking what came back)
    hostNanos = System.nanoTime() - start - waited;
    return new Step(out, java.util.Arrays.asList(results));
  }

  /**
   * A decode-only step as a graph ({@link DecodeGraphs}): {@code plan} padded to {@code size} rows,
   * its metadata and sampling parameters uploaded, the graph of its kind captured if it is not yet,
   * launched; then the chunks' host logits (their rows of the one LM-head piece) and the sampled
   * rows' results come down. Rows, in {@code sorted}, are in logit-row order, {@code order} maps
   * them back. Null when the device refused the capture: graphs are then off for this runner (one
   * warning) and the step runs eagerly.
   */
  private Step replay(
      BatchPlan plan,
      int size,
      boolean[] hostLogits,
      List<DeviceSampling.Params> sorted,
      int[] sortedSource,
      Integer[] order,
      long start) {
    int chunks = plan.rows();
    BatchPlan p = plan.padded(size, scratchBlock, blockSize);
    upload(p);
    boolean sampled = !sorted.isEmpty();
    DeviceSampler.Batch sampling = sampled ? graphs.sampling(sorted, sortedSource, size) : null;
    // what the captured calls' arguments are made of: any change drops the graphs
    long[] ss = graphs.samplingStamp();
    long[] stamp = {
      x,
      h,
      qkv,
      q,
      attn,
      y,
      gu,
      a,
      meta,
      ax,
      axRank,
      lora.table(),
      lora.capacity(),
      ss[0],
      ss[1],
      ss[2],
      samplerThreads,
      logits,
      sampleWork,
      attnPart
    };
    DecodeGraphs.Key key = new DecodeGraphs.Key(size, p.anyAdapter(), sampled, attentionSplit(p));
    Long graph = graphs.get(key, stamp);
    if (graph == null) {
      try {
        graph = capture(p, sampling, size);
      } catch (CudaException e) {
        log.warn(
            "{}: capturing a CUDA graph failed, decode steps run eagerly from now on: {}",
            gpu.describe(),
            e.getMessage());
        useGraphs = false;
        graphs.dropAll();
        return null;
      }
      graphs.put(key, graph);
    }
    gpu.launchGraph(graph);
    long waited = 0;
    float[][] host = new float[size][];
    for (int j = 0; hostLogits != null && j < chunks; ) {
      if (!hostLogits[j]) {
        j++;
        continue;
      }
      int e = j;
      while (e < chunks && hostLogits[e]) e++;
      long d0 = System.nanoTime();
      download(0, j, e, host);
      waited += System.nanoTime() - d0;
      j = e;
    }
    Result[] results = new Result[order.length];
    if (sampled) {
      long d0 = System.nanoTime();
      List<Result> got = sampling.results(); // waits for the step
      waited += System.nanoTime() - d0;
      for (int j = 0; j < order.length; j++) results[order[j]] = got.get(j);
    }
    List<float[][]> out = new ArrayList<>(chunks);
    for (int c = 0; c < chunks; c++)
      out.add(hostLogits != null && hostLogits[c] ? new float[][] {host[c]} : null);
    hostNanos = System.nanoTime() - start - waited;
    return new Step(out, java.util.Arrays.asList(results));
  }

  /** The graph of a padded decode step: its layers, the LM head, the sampling kernel. */
  private long capture(BatchPlan p, DeviceSampler.Batch sampling, int size) {
    gpu.beginCapture();
    try {
      launchLayers(p);
      gpu.gemm(w.lmHead, h, logits, vocab, hidden, size, false, 0f);
      if (sampling != null) sampling.launch(logits, sampleWork, vocab, 0, size, 0, samplerThreads);
    } catch (RuntimeException | Error e) {
      try { // ends the capture, so the stream can be used again
        gpu.destroyGraph(gpu.endCapture());
      } catch (RuntimeException again) {
        e.addSuppressed(again);
      }
      throw e;
    }
    return gpu.endCapture();
  }

  /** Copies logit rows {@code r0+j .. r0+e} of the current piece into {@code host}. */
  private void download(int r0, int j, int e, float[][] host) {
    hostLogits.clear().limit((e - j) * vocab * 4);
    gpu.download(logits + (long) j * vocab * 4, hostLogits);
    FloatBuffer fb = hostLogits.duplicate().clear().order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer();
    for (int r = j; r < e; r++) {
      float[] row = new float[vocab];
      fb.get((r - j) * vocab, row);
      host[r0 + r] = row;
    }
  }

  /** Everything of a step up to the final norm of its logit rows (left in {@code h}). */
  private BatchPlan layers(BatchPlan s) {
    upload(s);
    launchLayers(s);
    return s;
  }

  /** The buffers a step of {@code s} needs, and its metadata uploaded. */
  private void upload(BatchPlan s) {
    int T = s.rows();
    ensureCapacity(T);
    ensureAttnPart(T, attentionSplit(s));
    ensureMeta(s.packedInts());
    hostMeta = s.pack(hostMeta);
    gpu.upload(meta, hostMeta);
    if (s.anyAdapter()) ensureAx(3 * T, lora.maxRank); // [T, up to 3 modules, rank]
  }

  /** The step's launches and products, up to the final norm (what a graph captures). */
  private void launchLayers(BatchPlan s) {
    int T = s.rows();
    long tokens = meta + 4L * s.offTokens(), positions = meta + 4L * s.offPositions();
    long slots = meta + 4L * s.offSlots(), tableOff = meta + 4L * s.offTableOffsets();
    long adapterSlots = meta + 4L * s.offAdapters(), logitRows = meta + 4L * s.offLogitRows();
    long tables = meta + 4L * s.offTables();
    float eps = (float) cfg.rmsNormEps();
    float scale = (float) (1.0 / Math.sqrt(headDim));
    int split = attentionSplit(s);

    gpu.launch("embed_rows", T, 1, KernelSource.ELEMENT_THREADS, tokens, w.embed, x, hidden);
    for (int li = 0; li < w.layers.length; li++) {
      CudaWeights.Layer l = w.layers[li];
      // attention block (the previous layer's MLP output y joins the residual here)
      norm(l.attnNorm(), li == 0 ? 0 : y, 0, T, eps);
      gpu.gemm(l.qkv(), h, qkv, qkvDim, hidden, T, false, 0f);
      loraAdd(s, li, CudaLora.Q, 3, h, hidden, qkv, qkvDim, adapterSlots, T); // q, k, v
      gpu.launch(
          "qkv_rope_cache",
          T,
          KernelSource.qkvBlocks(cfg),
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
          cfg.numKvHeads() * split,
          32 * KernelSource.attentionWarps(cfg),
          q,
          kCache[li],
          vCache[li],
          positions,
          tables,
          tableOff,
          cfg.slidingWindow(),
          scale,
          attn,
          attnPart,
          split);
      if (split > 1)
        gpu.launch(
            "attention_merge",
            T,
            cfg.numHeads(),
            KernelSource.ATT_MERGE_THREADS,
            attnPart,
            positions,
            cfg.slidingWindow(),
            split,
            attn);
      gpu.gemm(l.o(), attn, y, hidden, qDim, T, false, 0f);
      loraAdd(s, li, CudaLora.O, 1, attn, qDim, y, hidden, adapterSlots, T);
      // MLP block
      norm(l.mlpNorm(), y, 0, T, eps);
      gpu.gemm(l.gateUp(), h, gu, 2 * inter, hidden, T, false, 0f);
      loraAdd(s, li, CudaLora.GATE, 2, h, hidden, gu, 2 * inter, adapterSlots, T); // gate, up
      gpu.launch(
          "silu_mul",
          T,
          KernelSource.siluBlocks(inter),
          KernelSource.ELEMENT_THREADS,
          gu,
          a,
          inter);
      gpu.gemm(l.down(), a, y, hidden, inter, T, false, 0f);
      loraAdd(s, li, CudaLora.DOWN, 1, a, inter, y, hidden, adapterSlots, T);
    }
    // final norm only on the logit rows (their residual gets the last MLP output), then the LM head
    int R = s.logitRows().length;
    norm(w.finalNorm, y, logitRows, R, eps);
  }

  /** x[row] += add[row] (add ≠ 0), h[r] = bf16(rmsnorm(x[row]) · weight), row = rows[r] or r. */
  private void norm(long weight, long add, long rows, int n, float eps) {
    gpu.launch(
        "add_rmsnorm", n, 1, KernelSource.NORM_THREADS, x, add, weight, h, rows, hidden, eps);
  }

  /** The LoRA deltas of modules {@code first .. first + n - 1} ({@link CudaLora#add}). */
  private void loraAdd(
      BatchPlan s,
      int li,
      int first,
      int n,
      long in,
      int inDim,
      long out,
      int outStride,
      long adapterSlots,
      int T) {
    lora.add(s, li, first, n, in, inDim, out, outStride, adapterSlots, T, ax, axRank);
  }

  /**
   * Frees the KV cache, the work buffers, the LoRA slots and the weights, then closes the GPU. Not
   * left to the context's release: cuBLAS's runtime also holds the primary context, so it outlives
   * this runner and would keep its memory (CudaGpu.close frees what is left, as a second line).
   */
  @Override
  public void close() {
    if (closed) return;
    closed = true;
    try {
      for (CudaTrainer t : trainers) t.close(); // no-op for those closed already
      gpu.synchronize();
      for (long p : kCache) gpu.free(p);
      for (long p : vCache) gpu.free(p);
      for (long p :
          new long[] {x, h, qkv, q, attn, y, gu, a, meta, ax, logits, sampleWork, attnPart})
        gpu.free(p);
      gpu.free(ropeCos);
      gpu.free(ropeSin);
      graphs.close();
      samplerBuffers.close();
      lora.close();
      w.close();
    } finally {
      gpu.close();
    }
  }
}
