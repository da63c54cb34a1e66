package dev.troupe.engine.cuda;

import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.model.DType;
import dev.troupe.engine.model.Projection;
import dev.troupe.engine.model.TransformerLayout;
import dev.troupe.engine.model.WeightSource;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.ShortBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * A model's weights in device memory, uploaded once at load: every matrix and norm as BF16 (F32 and
 * F16 checkpoints are rounded to nearest even on the way; BF16 ones pass unchanged), the Qwen2
 * q/k/v biases as FP32. q/k/v are stacked into one {@code [qDim + 2·kvDim, H]} matrix and gate/up
 * into one {@code [2·I, H]}, so a layer takes four products. Tensors stream through a small host
 * buffer: the host never holds the model.
 */
final class CudaWeights implements AutoCloseable {
  /** One decoder layer: device addresses. */
  record Layer(
      long attnNorm,
      long qkv,
      long qkvBias,
      long qNorm,
      long kNorm,
      long o,
      long mlpNorm,
      long gateUp,
      long down) {}

  private static final int CHUNK = 1 << 22; // elements per host round trip

  final long embed, lmHead, finalNorm;
  final Layer[] layers;
  final long bytes;
  private final Gpu gpu;
  private final List<Long> allocations = new ArrayList<>();
  private long total;
  private final float[] host = new float[CHUNK];
  private final ByteBuffer staging =
      ByteBuffer.allocateDirect(CHUNK * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);

  CudaWeights(Gpu gpu, ModelConfig c, WeightSource w) {
    this.gpu = gpu;
    TransformerLayout layout = TransformerLayout.of(c);
    layout.check(w);
    int h = c.hiddenSize(), q = c.numHeads() * c.headDim(), kv = c.numKvHeads() * c.headDim();
    int inter = c.intermediateSize();
    try {
      embed = bf16(w, TransformerLayout.EMBED);
      lmHead = c.tieWordEmbeddings() ? embed : bf16(w, TransformerLayout.LM_HEAD);
      finalNorm = bf16(w, TransformerLayout.FINAL_NORM);
      layers = new Layer[c.numLayers()];
      for (int i = 0; i < layers.length; i++) {
        TransformerLayout.LayerTensors t = layout.layer(i);
        long qkv = alloc((long) (q + 2 * kv) * h * 2);
        upload(w, t.weight(Projection.Q), qkv, false);
        upload(w, t.weight(Projection.K), qkv + (long) q * h * 2, false);
        upload(w, t.weight(Projection.V), qkv + (long) (q + kv) * h * 2, false);
        long bias = 0;
        if (c.attentionBias()) {
          bias = alloc((long) (q + 2 * kv) * 4);
          upload(w, t.bias(Projection.Q), bias, true);
          upload(w, t.bias(Projection.K), bias + (long) q * 4, true);
          upload(w, t.bias(Projection.V), bias + (long) (q + kv) * 4, true);
        }
        long gateUp = alloc((long) 2 * inter * h * 2);
        upload(w, t.weight(Projection.GATE), gateUp, false);
        upload(w, t.weight(Projection.UP), gateUp + (long) inter * h * 2, false);
        layers[i] =
            new Layer(
                bf16(w, t.inputNorm()),
                qkv,
                bias,
                c.qkNorm() ? bf16(w, t.qNorm()) : 0,
                c.qkNorm() ? bf16(w, t.kNorm()) : 0,
                bf16(w, t.weight(Projection.O)),
                bf16(w, t.postNorm()),
                gateUp,
                bf16(w, t.weight(Projection.DOWN)));
      }
    } catch (RuntimeException | Error e) {
      close();
      throw e;
    }
    bytes = total;
  }

  private long alloc(long n) {
    long p = gpu.alloc(n);
    allocations.add(p);
    total += n;
    return p;
  }

  private long bf16(WeightSource w, String name) {
    long p = alloc(w.info(name).numel() * 2);
    upload(w, name, p, false);
    return p;
  }

  /** Streams tensor {@code name} to {@code dst} as BF16 (or FP32 when {@code fp32}). */
  private void upload(WeightSource w, String name, long dst, boolean fp32) {
    long n = w.info(name).numel();
    int eb = fp32 ? 4 : 2;
    for (long off = 0; off < n; off += CHUNK) {
      int len = (int) Math.min(CHUNK, n - off);
      staging.clear();
      if (fp32) {
        w.copyTo(name, off, len, FloatBuffer.wrap(host, 0, len));
        for (int i = 0; i < len; i++) staging.putFloat(host[i]);
      } else {
        ShortBuffer sb = staging.asShortBuffer();
        w.copyTo(name, off, len, sb, DType.BF16); // verbatim when stored as BF16
        staging.position(len * 2);
      }
      staging.flip();
      gpu.upload(dst + off * eb, staging);
    }
  }

  @Override
  public void close() {
    for (long p : allocations) gpu.free(p);
    allocations.clear();
  }
}
