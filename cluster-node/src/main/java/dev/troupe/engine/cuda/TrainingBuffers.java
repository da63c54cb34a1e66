package dev.troupe.engine.cuda;

import dev.troupe.engine.ModelConfig;
import java.util.ArrayList;
import java.util.List;

/**
 * The training pass's device memory for rows of up to {@link #rows} tokens (grown when a longer row
 * comes): the layer checkpoints (the residual stream at every layer's input and after the last:
 * gradient checkpointing keeps only these between the forward and the backward), one layer's
 * activations (recomputed per layer in the backward) and gradients, attention's scores and
 * probabilities ({@link TrainingAttention}: all heads of the row at once up to its cap), the LM
 * head's pieces of {@link #PIECE} target rows, and the per-position outputs. Sizes in the field
 * comments: T = {@link #rows}, H hidden, Q = heads·d, KV = KV heads·d, I intermediate, V
 * vocabulary, r rank.
 */
final class TrainingBuffers implements AutoCloseable {
  /** Target rows per LM-head product (their logits are the pass's largest buffer). */
  static final int PIECE = 256;

  private final Gpu gpu;
  private final ModelConfig c;
  private final int rank;
  private final List<Long> live = new ArrayList<>();
  int rows;
  long xs; // [L + 1][T, H] fp32: layer checkpoints
  long lp, ent, g, lseRows; // [T] fp32: log-probabilities, entropies, dL/dlogprob, targets' lse
  long scratch, stats; // [5T] fp64: the loss's; [4] fp64: loss, entropy, (spare)
  long hb, hb2, dxb; // [T, H] bf16: normed inputs of q/k/v and gate/up; bf16 copy of dx
  long qkv, dqkvB; // [T, Q + 2KV] fp32 product output; bf16 gradient there
  long q, o32, dO, dq; // [T, Q] fp32
  long qb, o, dOb; // [T, Q] bf16
  long k, v; // [T, KV] bf16
  long dk, dv; // [T, KV] fp32
  long attS, attP; // [attCells] fp32 / bf16: attention's scores and probabilities
  long attCells; // TrainingAttention.cells(T)
  long h1, y, dx, db; // [T, H] fp32
  long gu, da; // [T, 2I] / [T, I] fp32
  long a, dgu; // [T, I] / [T, 2I] bf16
  long xa, u; // [7][T, r] bf16: each module's x·Aᵀ; [T, r] bf16: dy·B
  final long fb, logits, dz, df; // [P, H] bf16, [P, V] fp32, [P, V] bf16, [P, H] fp32

  TrainingBuffers(Gpu gpu, ModelConfig c, int rank, int rows) {
    this.gpu = gpu;
    this.c = c;
    this.rank = rank;
    long h = c.hiddenSize(), vocab = c.vocabSize();
    fb = alloc(PIECE * h * 2);
    logits = alloc(PIECE * vocab * 4);
    dz = alloc(PIECE * vocab * 2);
    df = alloc(PIECE * h * 4);
    ensure(Math.max(1, rows));
  }

  /** Bytes of device memory for rows of {@code rows} tokens (the sharing policy's estimate). */
  static long bytes(ModelConfig c, int rank, long rows) {
    long h = c.hiddenSize(), q = (long) c.numHeads() * c.headDim();
    long kv = (long) c.numKvHeads() * c.headDim(), i = c.intermediateSize();
    long perRow =
        (c.numLayers() + 1L) * h * 4 // checkpoints
            + 4 * 4
            + 5 * 8 // per-position outputs, the loss's scratch
            + 3 * h * 2 // hb, hb2, dxb
            + (q + 2 * kv) * (4 + 2) // qkv, dqkv
            + q * (4 * 4 + 3 * 2) // q, o32, dO, dq; qb, o, dOb
            + kv * (2 * 2 + 2 * 4) // k, v; dk, dv
            + 4 * h * 4 // h1, y, dx, db
            + 3 * i * 4 // gu, da
            + 3 * i * 2 // a, dgu
            + 8L * rank * 2; // xa, u
    return rows * perRow
        + TrainingAttention.CELL_BYTES
            * TrainingAttention.cells(c, rows, TrainingAttention.WORK_BYTES)
        + PIECE * (h * 6 + (long) c.vocabSize() * 6);
  }

  /** Grows the per-row buffers for rows of {@code t} tokens (contents are not kept). */
  void ensure(int t) {
    if (t <= rows) return;
    freeRows();
    rows = Math.max(t, rows * 2);
    long n = rows, h = c.hiddenSize(), q = (long) c.numHeads() * c.headDim();
    long kv = (long) c.numKvHeads() * c.headDim(), i = c.intermediateSize();
    xs = alloc((c.numLayers() + 1L) * n * h * 4);
    lp = alloc(n * 4);
    ent = alloc(n * 4);
    g = alloc(n * 4);
    lseRows = alloc(n * 4);
    scratch = alloc(5 * n * 8);
    stats = alloc(4 * 8);
    hb = alloc(n * h * 2);
    hb2 = alloc(n * h * 2);
    dxb = alloc(n * h * 2);
    qkv = alloc(n * (q + 2 * kv) * 4);
    dqkvB = alloc(n * (q + 2 * kv) * 2);
    this.q = alloc(n * q * 4);
    o32 = alloc(n * q * 4);
    dO = alloc(n * q * 4);
    dq = alloc(n * q * 4);
    qb = alloc(n * q * 2);
    o = alloc(n * q * 2);
    dOb = alloc(n * q * 2);
    k = alloc(n * kv * 2);
    v = alloc(n * kv * 2);
    dk = alloc(n * kv * 4);
    dv = alloc(n * kv * 4);
    attCells = TrainingAttention.cells(c, n, TrainingAttention.WORK_BYTES);
    attS = alloc(attCells * 4);
    attP = alloc(attCells * 2);
    h1 = alloc(n * h * 4);
    y = alloc(n * h * 4);
    dx = alloc(n * h * 4);
    db = alloc(n * h * 4);
    gu = alloc(n * 2 * i * 4);
    da = alloc(n * i * 4);
    a = alloc(n * i * 2);
    dgu = alloc(n * 2 * i * 2);
    xa = alloc(7 * n * rank * 2);
    u = alloc(n * rank * 2);
  }

  /** Checkpoint {@code layer} (0 = the embeddings, L = after the last layer). */
  long checkpoint(int layer) {
    return xs + (long) layer * rows * c.hiddenSize() * 4;
  }

  /** Module {@code m}'s x·Aᵀ rows. */
  long xa(int m) {
    return xa + (long) m * rows * rank * 2;
  }

  private long alloc(long bytes) {
    long p = gpu.alloc(bytes);
    live.add(p);
    return p;
  }

  private void freeRows() {
    // the head's four buffers come first and stay
    while (live.size() > 4) gpu.free(live.remove(live.size() - 1));
  }

  @Override
  public void close() {
    for (long p : live) gpu.free(p);
    live.clear();
  }
}
