package dev.troupe.engine.cuda;

import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.cuda.TrainingPhases.Phase;
import dev.troupe.engine.model.Projection;

/**
 * One decoder layer of a training row, forward and backward, on the device: the serving forward's
 * steps (docs/engine.md) over the whole row with LoRA on the adapted projections, and the backward
 * to the layer's input and to the LoRA parameters (the base weights frozen). Every product is a
 * cuBLAS product with BF16 operands and FP32 accumulation: the activations and gradients that feed
 * one are BF16, the residual stream and its gradient FP32.
 *
 * <p>Shapes: T rows, H hidden, Q = heads·d, KV = KV heads·d, I intermediate, r rank; s = α / r.
 * LoRA on a projection {@code y = x Wᵀ}: {@code y += s·(x Aᵀ) Bᵀ}; backward with {@code u = dy B}:
 * {@code dB = s·dyᵀ (x Aᵀ)}, {@code dA = s·uᵀ x}, {@code dx += s·u A}.
 */
final class TrainingLayers {
  private final Gpu gpu;
  private final ModelConfig c;
  private final CudaWeights w;
  private final LoraParams lora;
  private final TrainingBuffers b;
  private final TrainingPhases phases;
  private final long ropeCos, ropeSin;
  private final int hidden, qDim, kvDim, qkvDim, inter, normThreads;
  private final float eps;

  TrainingLayers(
      Gpu gpu,
      ModelConfig c,
      CudaWeights w,
      LoraParams lora,
      TrainingBuffers b,
      TrainingPhases phases,
      long ropeCos,
      long ropeSin) {
    this.gpu = gpu;
    this.c = c;
    this.w = w;
    this.lora = lora;
    this.b = b;
    this.phases = phases;
    this.ropeCos = ropeCos;
    this.ropeSin = ropeSin;
    hidden = c.hiddenSize();
    qDim = c.numHeads() * c.headDim();
    kvDim = c.numKvHeads() * c.headDim();
    qkvDim = qDim + 2 * kvDim;
    inter = c.intermediateSize();
    normThreads = KernelSource.normThreads(hidden);
    eps = (float) c.rmsNormEps();
  }

  /** The row's device metadata: positions, identity slots, segment starts. */
  record Row(int length, long positions, long slots, long segStart) {}

  /**
   * Layer {@code li} from {@code xIn} to {@code xOut} ([T, H] fp32; xOut 0 = not needed, in the
   * backward's recompute), leaving in the buffers every activation its backward reads.
   */
  void forward(int li, long xIn, long xOut, Row row) {
    int t = row.length();
    CudaWeights.Layer l = w.layers[li];
    // INPUT_NORM: hb = bf16(rmsnorm(x))
    phases.at(Phase.ELEMENTWISE);
    norm(xIn, 0, l.attnNorm(), b.hb, t);
    // QKV_PROJ (+ LoRA): qkv [T, Q + 2KV] fp32
    phases.at(Phase.PRODUCTS);
    gpu.gemm(l.qkv(), b.hb, b.qkv, qkvDim, hidden, t, false, 0f);
    loraForward(li, Projection.Q, b.hb, b.qkv, qkvDim, 0, t);
    loraForward(li, Projection.K, b.hb, b.qkv, qkvDim, qDim, t);
    loraForward(li, Projection.V, b.hb, b.qkv, qkvDim, qDim + kvDim, t);
    // QKV_BIAS, QK_NORM, ROPE: q fp32 (and bf16), k and v bf16 in the row's own slots
    phases.at(Phase.ELEMENTWISE);
    gpu.launch(
        "qkv_rope_cache",
        t,
        KernelSource.qkvBlocks(c),
        KernelSource.QKV_THREADS,
        b.qkv,
        l.qkvBias(),
        l.qNorm(),
        l.kNorm(),
        row.positions(),
        row.slots(),
        ropeCos,
        ropeSin,
        b.q,
        b.k,
        b.v,
        eps);
    toBf16(b.q, b.qb, (long) t * qDim);
    // ATTENTION within each segment: o fp32, then bf16
    attention().forward(t, row.segStart(), b.qb, b.k, b.v, b.o32);
    phases.at(Phase.ELEMENTWISE);
    toBf16(b.o32, b.o, (long) t * qDim);
    // O_PROJ (+ LoRA); h1 = x + y; POST_NORM: hb2 = bf16(rmsnorm(h1))
    phases.at(Phase.PRODUCTS);
    gpu.gemm(l.o(), b.o, b.y, hidden, qDim, t, false, 0f);
    loraForward(li, Projection.O, b.o, b.y, hidden, 0, t);
    phases.at(Phase.ELEMENTWISE);
    gpu.copy(b.h1, xIn, (long) t * hidden * 4);
    norm(b.h1, b.y, l.mlpNorm(), b.hb2, t);
    // GATE_UP_PROJ (+ LoRA), SWIGLU, DOWN_PROJ (+ LoRA)
    phases.at(Phase.PRODUCTS);
    gpu.gemm(l.gateUp(), b.hb2, b.gu, 2 * inter, hidden, t, false, 0f);
    loraForward(li, Projection.GATE, b.hb2, b.gu, 2 * inter, 0, t);
    loraForward(li, Projection.UP, b.hb2, b.gu, 2 * inter, inter, t);
    phases.at(Phase.ELEMENTWISE);
    gpu.launch(
        "silu_mul",
        t,
        KernelSource.siluBlocks(inter),
        KernelSource.ELEMENT_THREADS,
        b.gu,
        b.a,
        inter);
    phases.at(Phase.PRODUCTS);
    gpu.gemm(l.down(), b.a, b.y, hidden, inter, t, false, 0f);
    loraForward(li, Projection.DOWN, b.a, b.y, hidden, 0, t);
    if (xOut == 0) return;
    // x_out = h1 + y
    phases.at(Phase.ELEMENTWISE);
    gpu.copy(xOut, b.h1, (long) t * hidden * 4);
    add(xOut, b.y, (long) t * hidden);
  }

  /**
   * Backward of layer {@code li}: recomputes its forward from {@code xIn}, then turns {@code dx}
   * (fp32 [T, H]: dL/d(layer output)) into dL/d(layer input) in place, writing the gradients of the
   * layer's LoRA parameters.
   */
  void backward(int li, long xIn, long dx, Row row) {
    int t = row.length();
    CudaWeights.Layer l = w.layers[li];
    forward(li, xIn, 0, row);
    // MLP branch: out = h1 + down(silu(gate) ∘ up)
    phases.at(Phase.ELEMENTWISE);
    toBf16(dx, b.dxb, (long) t * hidden);
    phases.at(Phase.PRODUCTS);
    gpu.matmul(
        new Gpu.Product(
            false, false, t, inter, hidden, 1f, b.dxb, hidden, l.down(), inter, 0f, b.da, inter,
            false));
    loraBackward(li, Projection.DOWN, b.dxb, hidden, b.a, b.da, t);
    phases.at(Phase.ELEMENTWISE);
    gpu.launch("silu_mul_bwd", t, 1, KernelSource.TRAIN_THREADS, b.da, b.gu, b.dgu, inter);
    phases.at(Phase.PRODUCTS);
    gpu.matmul(
        new Gpu.Product(
            false,
            false,
            t,
            hidden,
            2 * inter,
            1f,
            b.dgu,
            2 * inter,
            l.gateUp(),
            hidden,
            0f,
            b.db,
            hidden,
            false));
    loraBackward(li, Projection.GATE, b.dgu, 2 * inter, b.hb2, b.db, t);
    loraBackward(li, Projection.UP, b.dgu + (long) inter * 2, 2 * inter, b.hb2, b.db, t);
    phases.at(Phase.ELEMENTWISE);
    normBackward(b.db, b.h1, l.mlpNorm(), dx, 0, t); // dx = dL/dh1
    // attention branch: h1 = x + o_proj(attention(rope(norm(q, k)), v))
    toBf16(dx, b.dxb, (long) t * hidden);
    phases.at(Phase.PRODUCTS);
    gpu.matmul(
        new Gpu.Product(
            false, false, t, qDim, hidden, 1f, b.dxb, hidden, l.o(), qDim, 0f, b.dO, qDim, false));
    loraBackward(li, Projection.O, b.dxb, hidden, b.o, b.dO, t);
    phases.at(Phase.ELEMENTWISE);
    toBf16(b.dO, b.dOb, (long) t * qDim);
    attention().backward(t, row.segStart(), b.qb, b.k, b.v, b.o32, b.dO, b.dOb, b.dq, b.dk, b.dv);
    phases.at(Phase.ELEMENTWISE);
    gpu.launch(
        "qkv_rope_bwd",
        t,
        1,
        KernelSource.QKV_THREADS,
        b.qkv,
        l.qkvBias(),
        l.qNorm(),
        l.kNorm(),
        row.positions(),
        ropeCos,
        ropeSin,
        b.dq,
        b.dk,
        b.dv,
        b.dqkvB,
        eps);
    phases.at(Phase.PRODUCTS);
    gpu.matmul(
        new Gpu.Product(
            false, false, t, hidden, qkvDim, 1f, b.dqkvB, qkvDim, l.qkv(), hidden, 0f, b.db, hidden,
            false));
    loraBackward(li, Projection.Q, b.dqkvB, qkvDim, b.hb, b.db, t);
    loraBackward(li, Projection.K, b.dqkvB + (long) qDim * 2, qkvDim, b.hb, b.db, t);
    loraBackward(li, Projection.V, b.dqkvB + (long) (qDim + kvDim) * 2, qkvDim, b.hb, b.db, t);
    phases.at(Phase.ELEMENTWISE);
    normBackward(b.db, xIn, l.attnNorm(), dx, 0, t); // dx = dL/dx
  }

  /** Attention over the buffers' work memory as sized now (ensure may have moved it). */
  private TrainingAttention attention() {
    return new TrainingAttention(gpu, phases, c, b.attS, b.attP, b.attCells);
  }

  /** y[:, off ..] += s·(x Aᵀ) Bᵀ, keeping x Aᵀ for the backward. */
  private void loraForward(int li, Projection p, long x, long y, int ldy, int off, int t) {
    LoraParams.Module m = lora.module(li, p);
    if (m == null) return;
    int r = lora.rank;
    long xa = b.xa(p.ordinal());
    gpu.matmul(
        new Gpu.Product(
            false,
            true,
            t,
            r,
            m.in(),
            1f,
            x,
            m.in(),
            lora.pb + m.offA() * 2,
            m.in(),
            0f,
            xa,
            r,
            true));
    gpu.matmul(
        new Gpu.Product(
            false,
            true,
            t,
            m.out(),
            r,
            lora.scale,
            xa,
            r,
            lora.pb + m.offB() * 2,
            r,
            1f,
            y + off * 4L,
            ldy,
            false));
  }

  /** The LoRA gradients of one module from dy (bf16, leading dimension ldDy); dx += s·u A. */
  private void loraBackward(int li, Projection p, long dy, int ldDy, long x, long dx, int t) {
    LoraParams.Module m = lora.module(li, p);
    if (m == null) return;
    int r = lora.rank;
    float s = lora.scale;
    long xa = b.xa(p.ordinal());
    // u = dy B: [T, r]
    gpu.matmul(
        new Gpu.Product(
            false,
            false,
            t,
            r,
            m.out(),
            1f,
            dy,
            ldDy,
            lora.pb + m.offB() * 2,
            r,
            0f,
            b.u,
            r,
            true));
    // dB = s·dyᵀ (x Aᵀ): [out, r]
    gpu.matmul(
        new Gpu.Product(
            true, false, m.out(), r, t, s, dy, ldDy, xa, r, 0f, lora.g + m.offB() * 4, r, false));
    // dA = s·uᵀ x: [r, in]
    gpu.matmul(
        new Gpu.Product(
            true,
            false,
            r,
            m.in(),
            t,
            s,
            b.u,
            r,
            x,
            m.in(),
            0f,
            lora.g + m.offA() * 4,
            m.in(),
            false));
    // dx += s·u A: [T, in]
    gpu.matmul(
        new Gpu.Product(
            false,
            false,
            t,
            m.in(),
            r,
            s,
            b.u,
            r,
            lora.pb + m.offA() * 2,
            m.in(),
            1f,
            dx,
            m.in(),
            false));
  }

  /** x += add (when add ≠ 0), out = bf16(rmsnorm(x) · weight), every row. */
  private void norm(long x, long add, long weight, long out, int t) {
    gpu.launch("add_rmsnorm", t, 1, normThreads, x, add, weight, out, 0L, hidden, eps);
  }

  void normBackward(long dy, long x, long weight, long dx, long rows, int n) {
    gpu.launch("rmsnorm_bwd", n, 1, normThreads, dy, x, weight, dx, rows, hidden, eps);
  }

  void add(long x, long y, long n) {
    gpu.launch(
        "add_f32", LoraParams.grid(n), 1, KernelSource.TRAIN_THREADS, x, y, LoraParams.elements(n));
  }

  void toBf16(long x, long y, long n) {
    gpu.launch(
        "f32_to_bf16",
        LoraParams.grid(n),
        1,
        KernelSource.TRAIN_THREADS,
        x,
        y,
        LoraParams.elements(n));
  }
}
