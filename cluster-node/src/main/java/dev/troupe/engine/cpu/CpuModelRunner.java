package dev.troupe.engine.cpu;

import dev.troupe.engine.LoraAdapter;
import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.ModelRunner;
import dev.troupe.engine.model.LayerStep;
import dev.troupe.engine.model.ModelLoadException;
import dev.troupe.engine.model.Projection;
import dev.troupe.engine.model.RopeTables;
import dev.troupe.engine.model.TransformerLayout;
import dev.troupe.engine.model.WeightSource;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The decoder-only transformer forward (Llama, Mistral, Qwen2, Qwen3) over a paged KV cache.
 *
 * <p>One {@link #forward} runs every chunk of the batch together: all tokens of all sequences are
 * stacked into one activation matrix {@code x [T, H]}, so each projection is one matrix product
 * over the whole batch ({@link Linear}: BLAS GEMV for a single row, {@link DecodeKernels} for 2–31
 * rows when the Vector API is on, BLAS GEMM otherwise; weights {@code [out, in]} row-major).
 * Per-token work (norms, RoPE, attention over the sequence's cache blocks, SwiGLU) is plain Java on
 * float arrays. Names, shapes, layer steps and rotary tables come from the shared model definition
 * ({@link TransformerLayout}, {@link RopeTables}). Products run on OpenBLAS (called directly
 * through JavaCPP) and on this package's Java Vector API kernels; ND4J only allocates the off-heap
 * weight buffers BLAS reads. No native type leaves this package.
 *
 * <p>KV cache: per layer, {@code numBlocks · blockSize} slots of {@code [numKvHeads, headDim]} for
 * keys and for values; position {@code p} of a sequence lives in slot {@code blockTable[p / bs] ·
 * bs + p % bs}.
 *
 * <p>Thread: confined to its owner's thread, like every {@link ModelRunner}.
 */
public final class CpuModelRunner implements ModelRunner {
  private static final Logger log = LoggerFactory.getLogger(CpuModelRunner.class);

  /** Every {@link LayerStep} {@link #forward} implements. */
  private static final Set<LayerStep> SUPPORTED_STEPS = EnumSet.allOf(LayerStep.class);

  /** One decoder layer's weights; fused projections keep one product per step. */
  private record Layer(
      float[] attnNorm, // [H]
      Linear qkv, // [qDim + 2·kvDim, H]: q_proj, k_proj, v_proj stacked
      float[] qkvBias, // [qDim + 2·kvDim] or null
      float[] qNorm, // [d] or null
      float[] kNorm, // [d] or null
      Linear o, // [H, qDim]
      float[] mlpNorm, // [H]
      Linear gateUp, // [2·I, H]: gate_proj, up_proj stacked
      Linear down, // [H, I]
      float[] kCache, // [numBlocks·bs, nKV, d]
      float[] vCache) {}

  private final ModelConfig cfg;
  private final int blockSize;
  private final int numBlocks;
  private final int hidden, headDim, nHeads, nKv, qDim, kvDim, inter, vocab;
  private final float eps;
  private final Linear embed; // [V, H]; also the LM head when tied
  private final Linear lmHead; // [V, H]
  private final float[] finalNorm;
  private final Layer[] layers;
  private final RopeTables rope;
  private final Map<Integer, Lora> adapters = new HashMap<>();
  private final Linear.Scratch scratch = new Linear.Scratch();
  private boolean closed;

  private CpuModelRunner(ModelConfig cfg, WeightSource w, int numBlocks, int blockSize) {
    if (numBlocks < 1 || blockSize < 1)
      throw new IllegalArgumentException("numBlocks and blockSize must be >= 1");
    this.cfg = cfg;
    this.numBlocks = numBlocks;
    this.blockSize = blockSize;
    this.hidden = cfg.hiddenSize();
    this.headDim = cfg.headDim();
    this.nHeads = cfg.numHeads();
    this.nKv = cfg.numKvHeads();
    this.qDim = nHeads * headDim;
    this.kvDim = nKv * headDim;
    this.inter = cfg.intermediateSize();
    this.vocab = cfg.vocabSize();
    this.eps = (float) cfg.rmsNormEps();
    long cacheFloats = (long) numBlocks * blockSize * kvDim;
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
    // heap copies for the decode kernels, all or none: every matrix a product reads (an untied
    // embedding is only looked up, so it gets none)
    long kernelFloats = 0;
    for (String n : layout.productWeights()) kernelFloats += w.info(n).numel();
    Linear.HeapBudget budget =
        Linear.HeapBudget.ofHeap(kernelFloats, 2L * cfg.numLayers() * cacheFloats * Float.BYTES);
    this.embed = Linear.load(w, cfg.tieWordEmbeddings() ? budget : null, TransformerLayout.EMBED);
    this.lmHead = cfg.tieWordEmbeddings() ? embed : Linear.load(w, budget, layout.lmHead());
    this.finalNorm = w.floats(TransformerLayout.FINAL_NORM);
    this.layers = new Layer[cfg.numLayers()];
    for (int i = 0; i < layers.length; i++) {
      TransformerLayout.LayerTensors t = layout.layer(i);
      float[] bias = null;
      if (cfg.attentionBias()) {
        bias = new float[qDim + 2 * kvDim];
        int off = 0;
        for (Projection p : List.of(Projection.Q, Projection.K, Projection.V)) {
          float[] b = w.floats(t.bias(p));
          System.arraycopy(b, 0, bias, off, b.length);
          off += b.length;
        }
      }
      layers[i] =
          new Layer(
              w.floats(t.inputNorm()),
              Linear.stack(
                  w,
                  budget,
                  t.weight(Projection.Q),
                  t.weight(Projection.K),
                  t.weight(Projection.V)),
              bias,
              cfg.qkNorm() ? w.floats(t.qNorm()) : null,
              cfg.qkNorm() ? w.floats(t.kNorm()) : null,
              Linear.load(w, budget, t.weight(Projection.O)),
              w.floats(t.postNorm()),
              Linear.stack(w, budget, t.weight(Projection.GATE), t.weight(Projection.UP)),
              Linear.load(w, budget, t.weight(Projection.DOWN)),
              new float[(int) cacheFloats],
              new float[(int) cacheFloats]);
    }
    this.rope = RopeTables.of(cfg);
    if (DecodeKernels.AVAILABLE)
      log.info(
          "decode kernels: {} MB of weights copied to the heap, {} MB left on BLAS only (over troupe.engine.kernelHeapMB or the heap)",
          budget.copied * Float.BYTES >> 20,
          budget.refused * Float.BYTES >> 20);
  }

  /**
   * Loads the weights (checked against the config first) and allocates the KV cache. The weight
   * source may be closed afterwards: everything is copied into ND4J buffers.
   */
  public static CpuModelRunner load(
      ModelConfig cfg, WeightSource weights, int numBlocks, int blockSize) {
    try {
      return new CpuModelRunner(cfg, weights, numBlocks, blockSize);
    } catch (OutOfMemoryError e) {
      throw new ModelLoadException(
          "not enough memory to load the model from " + weights.origin(), e);
    }
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
    int n = blockSize * kvDim;
    for (Layer l : layers) {
      System.arraycopy(l.kCache(), src * n, l.kCache(), dst * n, n);
      System.arraycopy(l.vCache(), src * n, l.vCache(), dst * n, n);
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
    Step s = Step.of(batch, this);
    int T = s.tokens.length;

    // x [T, H]: token embeddings
    float[] x = new float[T * hidden];
    for (int t = 0; t < T; t++) embed.row(s.tokens[t], x, t * hidden);

    // RoPE angles per token: cos/sin [T, d/2]
    float[][] cos = new float[T][], sin = new float[T][];
    for (int t = 0; t < T; t++) {
      cos[t] = new float[headDim / 2];
      sin[t] = new float[headDim / 2];
      rope.angles(s.positions[t], cos[t], sin[t]);
    }

    for (int li = 0; li < layers.length; li++) {
      Layer l = layers[li];
      // attention block: x += o(attn(rope(norm(q)), rope(norm(k)), v)) of rmsnorm(x)
      float[] h = Kernels.rmsNorm(x, T, hidden, l.attnNorm(), eps);
      float[] qkv = l.qkv().apply(scratch, h, T); // [T, qDim + 2 kvDim]
      loraQkv(s, li, h, qkv, T);
      int stride = qDim + 2 * kvDim;
      for (int t = 0; t < T; t++) {
        int base = t * stride;
        if (l.qkvBias() != null) Kernels.addInPlace(qkv, base, l.qkvBias(), stride);
        if (l.qNorm() != null) {
          for (int hh = 0; hh < nHeads; hh++)
            Kernels.rmsNormInPlace(qkv, base + hh * headDim, headDim, l.qNorm(), eps);
          for (int g = 0; g < nKv; g++)
            Kernels.rmsNormInPlace(qkv, base + qDim + g * headDim, headDim, l.kNorm(), eps);
        }
        for (int hh = 0; hh < nHeads; hh++)
          RopeTables.rotate(qkv, base + hh * headDim, headDim, cos[t], sin[t]);
        for (int g = 0; g < nKv; g++)
          RopeTables.rotate(qkv, base + qDim + g * headDim, headDim, cos[t], sin[t]);
        // cache k, v of this token
        int slot = s.slots[t] * kvDim;
        System.arraycopy(qkv, base + qDim, l.kCache(), slot, kvDim);
        System.arraycopy(qkv, base + qDim + kvDim, l.vCache(), slot, kvDim);
      }
      float[] attn =
          Attention.run(
              s,
              qkv,
              stride,
              l.kCache(),
              l.vCache(),
              nHeads,
              nKv,
              headDim,
              blockSize,
              cfg.slidingWindow(),
              scratch); // [T, qDim]
      float[] o = l.o().apply(scratch, attn, T); // [T, H]
      lora(s, li, Projection.O, attn, qDim, o, hidden, 0, T);
      Kernels.addInPlace(x, o);

      // MLP block: x += down(silu(gate(h)) * up(h)) of h = rmsnorm(x)
      h = Kernels.rmsNorm(x, T, hidden, l.mlpNorm(), eps);
      float[] gu = l.gateUp().apply(scratch, h, T); // [T, 2I]
      lora(s, li, Projection.GATE, h, hidden, gu, 2 * inter, 0, T);
      lora(s, li, Projection.UP, h, hidden, gu, 2 * inter, inter, T);
      float[] a = Kernels.swiglu(gu, T, inter); // [T, I]
      float[] dn = l.down().apply(scratch, a, T); // [T, H]
      lora(s, li, Projection.DOWN, a, inter, dn, hidden, 0, T);
      Kernels.addInPlace(x, dn);
    }

    // logits [R, V] for the rows that need them
    int R = s.logitRows.length;
    float[] xr = new float[R * hidden];
    for (int r = 0; r < R; r++)
      System.arraycopy(x, s.logitRows[r] * hidden, xr, r * hidden, hidden);
    float[][] logits = lmHead.applyRows(scratch, Kernels.rmsNorm(xr, R, hidden, finalNorm, eps), R);
    List<float[][]> out = new ArrayList<>(batch.size());
    int r = 0;
    for (SequenceChunk c : batch) {
      int n = c.allLogits() ? c.tokens().length : 1;
      out.add(java.util.Arrays.copyOfRange(logits, r, r + n));
      r += n;
    }
    return out;
  }

  private void loraQkv(Step s, int li, float[] h, float[] qkv, int T) {
    if (!s.anyAdapter) return;
    int stride = qDim + 2 * kvDim;
    lora(s, li, Projection.Q, h, hidden, qkv, stride, 0, T);
    lora(s, li, Projection.K, h, hidden, qkv, stride, qDim, T);
    lora(s, li, Projection.V, h, hidden, qkv, stride, qDim + kvDim, T);
  }

  /**
   * y[t, off ..] += scale · B (A x[t]) for rows whose chunk runs an adapter covering the module.
   */
  private void lora(
      Step s,
      int li,
      Projection module,
      float[] x,
      int in,
      float[] y,
      int yStride,
      int off,
      int T) {
    if (!s.anyAdapter) return;
    for (int t = 0; t < T; t++) {
      Lora a = s.adapters[t];
      if (a != null) a.apply(li, module, x, t * in, in, y, t * yStride + off);
    }
  }

  int vocab() {
    return vocab;
  }

  int numBlocksInternal() {
    return numBlocks;
  }

  Lora adapter(int id) {
    Lora a = adapters.get(id);
    if (a == null) throw new IllegalArgumentException("unknown adapter id " + id);
    return a;
  }

  @Override
  public void close() {
    if (closed) return;
    closed = true;
    adapters.clear();
    scratch.close();
    embed.close();
    if (lmHead != embed) lmHead.close();
    for (Layer l : layers) {
      l.qkv().close();
      l.o().close();
      l.gateUp().close();
      l.down().close();
    }
  }

  /** The batch flattened to rows: per token its id, position, cache slot and adapter. */
  static final class Step {
    int[] tokens;
    int[] positions;
    int[] slots;
    int[] chunkStart; // per chunk, first row
    int[][] blockTables; // per chunk
    int[] chunkOf; // per row
    Lora[] adapters; // per row, null = base
    boolean anyAdapter;
    int[] logitRows;

    static Step of(List<SequenceChunk> batch, CpuModelRunner m) {
      int T = 0, R = 0;
      for (SequenceChunk c : batch) {
        T += c.tokens().length;
        R += c.allLogits() ? c.tokens().length : 1;
      }
      Step s = new Step();
      s.tokens = new int[T];
      s.positions = new int[T];
      s.slots = new int[T];
      s.chunkOf = new int[T];
      s.adapters = new Lora[T];
      s.chunkStart = new int[batch.size()];
      s.blockTables = new int[batch.size()][];
      s.logitRows = new int[R];
      int t = 0, r = 0;
      for (int ci = 0; ci < batch.size(); ci++) {
        SequenceChunk c = batch.get(ci);
        int end = c.startPosition() + c.tokens().length;
        if ((long) c.blockTable().length * m.blockSize < end)
          throw new IllegalArgumentException(
              "chunk "
                  + ci
                  + ": block table of "
                  + c.blockTable().length
                  + " blocks does not cover position "
                  + (end - 1));
        for (int b = 0, nb = (end + m.blockSize - 1) / m.blockSize; b < nb; b++)
          m.checkBlock(c.blockTable()[b]);
        Lora a = c.adapterId() == 0 ? null : m.adapter(c.adapterId());
        s.anyAdapter |= a != null;
        s.chunkStart[ci] = t;
        s.blockTables[ci] = c.blockTable();
        for (int i = 0; i < c.tokens().length; i++, t++) {
          int id = c.tokens()[i];
          if (id < 0 || id >= m.vocab)
            throw new IllegalArgumentException("token id " + id + " outside the vocabulary");
          int pos = c.startPosition() + i;
          s.tokens[t] = id;
          s.positions[t] = pos;
          s.slots[t] = c.blockTable()[pos / m.blockSize] * m.blockSize + pos % m.blockSize;
          s.chunkOf[t] = ci;
          s.adapters[t] = a;
          if (c.allLogits() || i == c.tokens().length - 1) s.logitRows[r++] = t;
        }
      }
      return s;
    }
  }
}
