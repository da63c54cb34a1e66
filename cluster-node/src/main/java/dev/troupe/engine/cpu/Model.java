package dev.troupe.engine.cpu;

import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.model.DType;
import dev.troupe.engine.model.Projection;
import dev.troupe.engine.model.RopeTables;
import dev.troupe.engine.model.TransformerLayout;
import dev.troupe.engine.model.WeightSource;
import java.util.List;

/**
 * A model's weights as the CPU runner keeps them: matrices in the served dtype ({@link Matrix}),
 * norms and biases in FP32, q/k/v fused into one matrix and gate/up interleaved in blocks of {@link
 * #GATE_UP_BLOCK} rows (so one product per fused projection and SwiGLU in the same pass), the KV
 * cache per layer. With {@code quantized} every matrix (embedding and LM head included, as in a
 * Q8_0 GGUF) is 8-bit ({@link Q8Format}).
 */
final class Model {
  /** Rows per gate (and per up) block of the fused gate/up matrix. */
  static final int GATE_UP_BLOCK = 16;

  /** One decoder layer. */
  record Layer(
      float[] attnNorm, // [H]
      Matrix qkv, // [qDim + 2·kvDim, H]
      float[] qkvBias, // [qDim + 2·kvDim] or null
      float[] qNorm, // [d] or null
      float[] kNorm, // [d] or null
      Matrix o, // [H, qDim]
      float[] mlpNorm, // [H]
      Matrix gateUp, // [2·I, H], blocks of GATE_UP_BLOCK gate rows then as many up rows
      Matrix down, // [H, I]
      float[] kCache, // [numBlocks, nKV, d, bs]: per block, KV head by KV head, transposed
      float[] vCache) {} // [numBlocks, nKV, bs, d] (Attention.store)

  final ModelConfig cfg;
  final DType dtype;
  final boolean quantized;
  final int hidden, headDim, nHeads, nKv, qDim, kvDim, inter, vocab;
  final float eps;
  final Matrix embed; // [V, H]; also the LM head when tied
  final Matrix lmHead; // [V, H]
  final float[] finalNorm;
  final Layer[] layers;
  final RopeTables rope;

  Model(ModelConfig cfg, WeightSource w, DType dtype, boolean quantized, long cacheFloats) {
    this.cfg = cfg;
    this.dtype = dtype;
    this.quantized = quantized;
    this.hidden = cfg.hiddenSize();
    this.headDim = cfg.headDim();
    this.nHeads = cfg.numHeads();
    this.nKv = cfg.numKvHeads();
    this.qDim = nHeads * headDim;
    this.kvDim = nKv * headDim;
    this.inter = cfg.intermediateSize();
    this.vocab = cfg.vocabSize();
    this.eps = (float) cfg.rmsNormEps();
    TransformerLayout layout = TransformerLayout.of(cfg);
    boolean q = quantized;
    this.embed = Matrix.load(w, dtype, q, List.of(TransformerLayout.EMBED));
    this.lmHead =
        cfg.tieWordEmbeddings() ? embed : Matrix.load(w, dtype, q, List.of(layout.lmHead()));
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
              Matrix.load(
                  w,
                  dtype,
                  q,
                  List.of(t.weight(Projection.Q), t.weight(Projection.K), t.weight(Projection.V))),
              bias,
              cfg.qkNorm() ? w.floats(t.qNorm()) : null,
              cfg.qkNorm() ? w.floats(t.kNorm()) : null,
              Matrix.load(w, dtype, q, List.of(t.weight(Projection.O))),
              w.floats(t.postNorm()),
              Matrix.loadInterleaved(
                  w, dtype, q, t.weight(Projection.GATE), t.weight(Projection.UP), GATE_UP_BLOCK),
              Matrix.load(w, dtype, q, List.of(t.weight(Projection.DOWN))),
              new float[(int) cacheFloats],
              new float[(int) cacheFloats]);
    }
    this.rope = RopeTables.of(cfg);
  }

  /** Whether the products read packed activation rows (16-bit weights, not 8-bit). */
  boolean packed() {
    return dtype != DType.F32 && !quantized;
  }

  /** Bytes of weights held (embedding, LM head, layers). */
  long weightBytes() {
    long b = embed.bytes() + (lmHead == embed ? 0 : lmHead.bytes());
    for (Layer l : layers) b += l.qkv.bytes() + l.o.bytes() + l.gateUp.bytes() + l.down.bytes();
    return b;
  }
}
