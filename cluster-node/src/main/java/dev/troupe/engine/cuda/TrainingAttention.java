package dev.troupe.engine.cuda;

import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.cuda.TrainingPhases.Phase;
import java.util.ArrayList;
import java.util.List;

/**
 * Causal attention over a packed training row, forward and backward, on the tensor cores: per head
 * the scores {@code S = scale·Q Kᵀ}, {@code O = P V} and the backward's {@code dP = dO Vᵀ}, {@code
 * dQ = dS K}, {@code dK = Σ dSᵀ Q}, {@code dV = Σ Pᵀ dO} are cuBLAS strided-batched products (BF16
 * operands, FP32 accumulation) over the whole row; two row kernels between them apply the segment
 * mask and the softmax ({@code attention_probs}: P in BF16, zero outside the mask) and its backward
 * ({@code attention_dscores}: {@code dS = P ∘ (dP − dO·O)·scale}). Every product covers all keys of
 * its query rows, the masked ones too (zero in P): twice the causal work, on tensor cores, where
 * the CUDA-core kernels this replaces walked only the visible keys (docs/benchmarks.md, "GPU
 * training": expected much faster, not measured on a GPU yet).
 *
 * <p>GQA: query head {@code h} reads KV head {@code h / group}; the products go one call per head
 * of a group ({@code hl}), batched over the KV heads, so every operand of a batch lies at a fixed
 * stride in the row-major [T, Q] and [T, KV] activations. The sums over a group's heads (dK, dV)
 * accumulate with beta = 1 into buffers zeroed first.
 *
 * <p>Work memory: S (FP32, also dP) and P (BF16, also dS) for a block of heads and query rows, at
 * most {@link #WORK_BYTES}: all heads of a row at once when they fit (then the backward reuses the
 * forward's P, which the layer's recompute has just made), else blocks of KV heads, else blocks of
 * query rows of one KV head (a block of rows needs only the keys up to its last row). Shapes: T
 * rows, Q = heads·d, KV = KV heads·d, S and P {@code [heads of the block][rows][keys]}.
 */
final class TrainingAttention {
  /** Bytes of the scores and probabilities of one block (FP32 + BF16 per cell), at most. */
  static final long WORK_BYTES = 512L << 20;

  static final int CELL_BYTES = 6;

  /**
   * KV heads {@code [g0, g0 + kvHeads)} with their query heads, query rows {@code [r0, r0 + rows)},
   * keys {@code [0, keys)}.
   */
  record Block(int g0, int kvHeads, int r0, int rows, int keys) {}

  private final Gpu gpu;
  private final TrainingPhases phases;
  private final int d, kvHeads, group, qDim, kvDim, window, threads;
  private final long cells;
  private final long s, p; // [cells] fp32, [cells] bf16
  private final float scale;

  /** Attention over {@code s} (fp32) and {@code p} (bf16) work buffers of {@code cells} each. */
  TrainingAttention(Gpu gpu, TrainingPhases phases, ModelConfig c, long s, long p, long cells) {
    this.gpu = gpu;
    this.phases = phases;
    this.s = s;
    this.p = p;
    this.cells = cells;
    d = c.headDim();
    kvHeads = c.numKvHeads();
    group = c.numHeads() / c.numKvHeads();
    qDim = c.numHeads() * d;
    kvDim = kvHeads * d;
    window = c.slidingWindow();
    threads = KernelSource.TRAIN_THREADS;
    scale = (float) (1.0 / Math.sqrt(d));
  }

  /** Work cells for rows of up to {@code t} tokens within {@code bytes} (at least one key row). */
  static long cells(ModelConfig c, long t, long bytes) {
    long all = c.numHeads() * t * t, group = c.numHeads() / c.numKvHeads();
    return Math.max(group * t, Math.min(all, bytes / CELL_BYTES));
  }

  /**
   * The blocks that cover a row of {@code t} tokens in {@code cells} cells, for {@code kv} KV heads
   * of {@code group} query heads each.
   */
  static List<Block> plan(int kv, int group, int t, long cells) {
    long perKv = (long) group * t * t;
    List<Block> out = new ArrayList<>();
    if (perKv <= cells) {
      int step = (int) Math.min(kv, cells / perKv);
      for (int g = 0; g < kv; g += step) out.add(new Block(g, Math.min(step, kv - g), 0, t, t));
      return out;
    }
    int rows = (int) Math.max(1, cells / ((long) group * t));
    for (int g = 0; g < kv; g++)
      for (int r = 0; r < t; r += rows) {
        int n = Math.min(rows, t - r);
        out.add(new Block(g, 1, r, n, r + n));
      }
    return out;
  }

  /**
   * o32 [T, Q] fp32 = attention of qb [T, Q] bf16 over k, v [T, KV] bf16 with the row's segment
   * starts ({@code segStart}, int [T] on the device).
   */
  void forward(int t, long segStart, long qb, long k, long v, long o32) {
    phases.at(Phase.ATTENTION_FORWARD);
    for (Block b : plan(t)) {
      probabilities(b, segStart, qb, k);
      for (int hl = 0; hl < group; hl++) // O_h = P_h V_g: [rows, d]
      product(
            b,
            false,
            false,
            b.rows(),
            d,
            b.keys(),
            1f,
            probs(b, hl),
            kv(v, b, 2),
            0f,
            q(o32, b, hl, 4));
    }
  }

  /**
   * The backward of {@link #forward} (which must have run on the same inputs): from dO (fp32 {@code
   * dO} and its bf16 copy {@code dOb}, [T, Q]) and the forward's o32 to dq [T, Q] and dk, dv [T,
   * KV], fp32.
   */
  void backward(
      int t,
      long segStart,
      long qb,
      long k,
      long v,
      long o32,
      long dO,
      long dOb,
      long dq,
      long dk,
      long dv) {
    phases.at(Phase.ATTENTION_BACKWARD);
    zero(dk, (long) t * kvDim);
    zero(dv, (long) t * kvDim);
    List<Block> blocks = plan(t);
    for (Block b : blocks) {
      if (blocks.size() > 1) {
        // another block's P is in the buffers: this one's again, from the same inputs
        phases.at(Phase.ATTENTION_FORWARD);
        probabilities(b, segStart, qb, k);
        phases.at(Phase.ATTENTION_BACKWARD);
      }
      int n = b.keys(), r = b.rows();
      for (int hl = 0; hl < group; hl++) {
        // dV_g += P_hᵀ dO_h: [keys, d]; dP_h = dO_h V_gᵀ: [rows, keys], over S
        product(b, true, false, n, d, r, 1f, probs(b, hl), q(dOb, b, hl, 2), 1f, kv(dv, b, 4));
        product(b, false, true, r, n, d, 1f, q(dOb, b, hl, 2), kv(v, b, 2), 0f, scores(b, hl));
      }
      // dS = P ∘ (dP − dO·O)·scale, over P
      gpu.launch(
          "attention_dscores",
          r,
          b.kvHeads() * group,
          threads,
          s,
          p,
          dO,
          o32,
          b.r0(),
          b.g0() * group,
          n,
          scale);
      for (int hl = 0; hl < group; hl++) {
        // dQ_h = dS_h K_g: [rows, d]; dK_g += dS_hᵀ Q_h: [keys, d]
        product(b, false, false, r, d, n, 1f, probs(b, hl), kv(k, b, 2), 0f, q(dq, b, hl, 4));
        product(b, true, false, n, d, r, 1f, probs(b, hl), q(qb, b, hl, 2), 1f, kv(dk, b, 4));
      }
    }
  }

  private List<Block> plan(int t) {
    return plan(kvHeads, group, t, cells);
  }

  /** S = scale·Q Kᵀ per head of the block, then P = its masked softmax. */
  private void probabilities(Block b, long segStart, long qb, long k) {
    for (int hl = 0; hl < group; hl++)
      product(
          b,
          false,
          true,
          b.rows(),
          b.keys(),
          d,
          scale,
          q(qb, b, hl, 2),
          kv(k, b, 2),
          0f,
          scores(b, hl));
    gpu.launch(
        "attention_probs",
        b.rows(),
        b.kvHeads() * group,
        threads,
        s,
        p,
        segStart,
        window,
        b.r0(),
        b.keys());
  }

  /** A matrix of each KV head of a block: its first one's address, leading dimension, stride. */
  private record Operand(long at, int ld, long stride) {}

  /** C = alpha·op(A)·op(B) + beta·C for each KV head of the block (BF16 A and B, FP32 C). */
  private void product(
      Block b,
      boolean transA,
      boolean transB,
      int m,
      int n,
      int k,
      float alpha,
      Operand x,
      Operand y,
      float beta,
      Operand c) {
    gpu.matmulBatched(
        new Gpu.Product(
            transA, transB, m, n, k, alpha, x.at(), x.ld(), y.at(), y.ld(), beta, c.at(), c.ld(),
            false),
        new Gpu.Strides(x.stride(), y.stride(), c.stride(), b.kvHeads()));
  }

  /** Head hl of each KV head of the block, from the block's first row, in a [T, Q] matrix. */
  private Operand q(long base, Block b, int hl, int bytes) {
    long at = base + bytes * ((long) b.r0() * qDim + (long) (b.g0() * group + hl) * d);
    return new Operand(at, qDim, (long) group * d);
  }

  /** Each KV head of the block in a [T, KV] matrix (keys start at row 0). */
  private Operand kv(long base, Block b, int bytes) {
    return new Operand(base + bytes * ((long) b.g0() * d), kvDim, d);
  }

  /**
   * Head hl of each KV head of the block in S ([rows, keys] per head, heads in order: a KV head's
   * group lies between one batch member and the next).
   */
  private Operand scores(Block b, int hl) {
    long cellsPerHead = (long) b.rows() * b.keys();
    return new Operand(s + 4 * hl * cellsPerHead, b.keys(), group * cellsPerHead);
  }

  /** As {@link #scores} in P. */
  private Operand probs(Block b, int hl) {
    long cellsPerHead = (long) b.rows() * b.keys();
    return new Operand(p + 2 * hl * cellsPerHead, b.keys(), group * cellsPerHead);
  }

  private void zero(long x, long n) {
    gpu.launch("fill_f32", LoraParams.grid(n), 1, threads, x, 0f, LoraParams.elements(n));
  }
}
