package dev.troupe.engine.cpu;

import dev.troupe.engine.ComputeSettings;
import dev.troupe.engine.model.DType;
import dev.troupe.engine.model.Projection;
import dev.troupe.engine.model.RopeTables;
import java.util.Arrays;

/**
 * One runner's forward step as a single team region ({@link Team}): every member runs {@link
 * #program} for the whole step, partitioning each phase (rows of a norm, output rows of a product,
 * tokens, attention items) by member id, with a barrier where a phase needs another's output. The
 * layer's phases are its {@link dev.troupe.engine.model.LayerStep}s in order; residual adds are
 * fused into the o and down products and SwiGLU into the gate/up product.
 *
 * <p>Products of up to {@link #KERNEL_MAX_ROWS} rows run on the Vector API kernels (each weight row
 * read once for all rows), larger ones (prefill) on single-threaded OpenBLAS GEMM over FP32 tiles
 * ({@link Blas}); either way every member takes part, {@linkplain Team.Claims claiming} the output
 * rows piece by piece ({@link #pieceRows}), and the prefill chunks' attention GEMMs are shared out
 * the same way. Buffers are reused across steps; logits rows are new arrays.
 *
 * <p>With oneDNN's BF16 matmul ({@link Bf16Gemm}) a row's result depends only on what the row is,
 * never on the rest of the step: the step's rows come in two ranges ({@link Step}), its prompt
 * tokens' rows on oneDNN (any number), its generated tokens' rows {@code [0, fp32Rows)} on the
 * kernels with oneDNN's bits ({@link Bf16Gemm#decodeRows}: every product input rounded to BF16
 * where it is made, the kernels adding as oneDNN does), or on oneDNN with the prompt rows when a
 * step has at least {@code decodeRows} of them; so a request re-prefilled elsewhere (migration,
 * recompute) writes the keys and values its first replica wrote, whatever its companions. Each
 * product is then one or two calls; the LM head follows the same rule. Where oneDNN's bits are not
 * the kernels' ({@code decodeRows} 0), generated rows and every LM head row take the FP32 path
 * unrounded (kernels up to {@link #KERNEL_MAX_ROWS} rows, OpenBLAS beyond).
 */
final class Forward implements AutoCloseable {
  /** Most rows a product sends to the Vector API kernels; more go to BLAS GEMM (measured). */
  static final int KERNEL_MAX_ROWS = ComputeSettings.jvm().kernelMaxRows();

  private static final int CLAIMS_PER_LAYER = 5; // qkv, o, gate/up, down, prefill attention

  /** Bytes of 16-bit weights in a claimed piece of a product: a few µs of streaming. */
  private static final long PIECE_BYTES = 128 << 10;

  private final Model md;
  private final Team team;
  private final Attention attention;
  private final Team.Claims claims; // one counter per product (and prefill attention) of a step
  private final Member[] members;
  private final Bf16Gemm bf16; // prompt rows' products on oneDNN, or null (member 0 calls it)
  private final int decodeRows; // steps of this many generated rows run them on oneDNN; 0 = FP32

  // activations, grown to the step's size
  private float[] x = new float[0], h = new float[0], qkv = new float[0], attn = new float[0];
  private float[] gu = new float[0], act = new float[0], xr = new float[0], logits = new float[0];
  private float[] angles = new float[0]; // per token: cos [d/2], sin [d/2] of its position

  /** What one member keeps between steps. */
  private static final class Member {
    final Attention.Scratch attention = new Attention.Scratch();
    final Blas blas = new Blas();
    final Attention.ChunkBuffers chunks = new Attention.ChunkBuffers();
    float[] row = new float[0]; // a natural activation row (LoRA)
    float[] tmp = new float[0]; // SwiGLU block
  }

  Forward(Model md, Team team, int blockSize) {
    this.md = md;
    this.team = team;
    this.claims = new Team.Claims(team.size());
    this.attention =
        new Attention(md.nHeads, md.nKv, md.headDim, blockSize, md.cfg.slidingWindow());
    this.members = new Member[team.size()];
    this.bf16 =
        (md.dtype == DType.BF16 || md.quantized) && bf16GemmAvailable() && allOnOneDnn(md)
            ? new Bf16Gemm()
            : null;
    this.decodeRows =
        bf16 != null && md.dtype == DType.BF16 && !md.quantized ? Bf16Gemm.decodeRows() : 0;
    int wide = Math.max(Math.max(md.hidden, md.inter), md.qDim);
    for (int m = 0; m < members.length; m++) {
      members[m] = new Member();
      members[m].row = new float[wide];
      members[m].tmp = new float[Model.GATE_UP_BLOCK];
    }
  }

  /** The fewest generated rows a step sends to oneDNN; 0 = none (they take the FP32 path). */
  int decodeRows() {
    return decodeRows;
  }

  /** Whether prompt rows run on oneDNN ({@link Step}'s two ranges). */
  boolean splitsPrompt() {
    return bf16 != null;
  }

  /**
   * Runs the step; returns logits rows in {@code s.logitRows} order. The FP32 rows' activations are
   * packed where they go to the kernels; oneDNN's rows are natural (every width is then a multiple
   * of 32, so both layouts have the same stride).
   */
  float[][] run(Step s) {
    int T = s.tokens.length, R = s.logitRows.length;
    if (decodeRows > 0 && s.fp32Rows >= decodeRows) s.fp32Rows = 0; // the same bits on oneDNN
    boolean kern = s.fp32Rows <= KERNEL_MAX_ROWS, packed = kern && md.packed();
    boolean headKern = !headOnDnn(R) && R <= KERNEL_MAX_ROWS, headPacked = headKern && md.packed();
    int hs = Activations.stride(md.hidden, packed);
    x = grow(x, T * md.hidden);
    h = grow(h, T * hs);
    qkv = grow(qkv, T * (md.qDim + 2 * md.kvDim));
    attn = grow(attn, T * Activations.stride(md.qDim, packed));
    gu = grow(gu, T * 2 * md.inter);
    act = grow(act, T * Activations.stride(md.inter, packed));
    xr = grow(xr, R * Activations.stride(md.hidden, headPacked));
    logits = grow(logits, (long) R * md.vocab);
    angles = grow(angles, (long) T * md.headDim);
    Attention.Plan plan = attention.plan(s);
    float[][] out = new float[R][];
    claims.reset(CLAIMS_PER_LAYER * md.layers.length + 1);
    boolean usesBlas = !kern || !headKern && !headOnDnn(R) || plan.blasChunks.length > 0;
    if (usesBlas) Blas.singleThreaded();
    try {
      team.run(m -> program(m, s, plan, kern, packed, headKern, headPacked, out));
    } finally {
      if (usesBlas) Blas.restore();
    }
    return out;
  }

  private void program(
      int m,
      Step s,
      Attention.Plan plan,
      boolean kern,
      boolean packed,
      boolean headKern,
      boolean headPacked,
      float[][] out) {
    int M = team.size(), T = s.tokens.length, H = md.hidden, G = s.fp32Rows;
    int[] rows = Team.share(T, M, m, 1);
    for (int t = rows[0]; t < rows[1]; t++) {
      md.embed.rowTo(s.tokens[t], x, t * H);
      md.rope.angles(s.positions[t], angles, t * md.headDim); // once per step, for every layer
    }
    int hs = Activations.stride(H, packed), qs = Activations.stride(md.qDim, packed);
    int qkvOut = md.qDim + 2 * md.kvDim, slot = 0; // slot: the product's claim counter
    for (int li = 0; li < md.layers.length; li++) {
      Model.Layer l = md.layers[li];
      team.barrier();
      // INPUT_NORM
      for (int t = rows[0]; t < rows[1]; t++) {
        Kernels.normRow(x, t * H, H, l.attnNorm(), md.eps, h, t * hs, packed && t < G);
        if (decodeRows > 0) Kernels.roundToBf16(h, t * hs, hs);
      }
      team.barrier();
      // QKV_PROJ
      product(m, M, s, li, l.qkv(), h, hs, packed, qkv, false, kern, 4, slot++, false);
      team.barrier();
      // QKV_BIAS, QK_NORM, ROPE, and the new keys/values into the cache
      for (int t = rows[0]; t < rows[1]; t++) prepare(m, s, t, l, qkvOut);
      team.barrier();
      // ATTENTION
      attention.perToken(
          m,
          M,
          plan,
          s,
          qkv,
          qkvOut,
          l.kCache(),
          l.vCache(),
          attn,
          qs,
          packed ? G : 0,
          members[m].attention);
      int units = attention.chunkUnits(plan), chunkSlot = slot++;
      if (units > 0) { // after this member's per-token items: the keys are all stored
        Member me = members[m];
        for (int u; (u = claims.claim(chunkSlot, m, units)) >= 0; )
          attention.chunk(
              plan,
              u,
              s,
              qkv,
              qkvOut,
              l.kCache(),
              l.vCache(),
              attn,
              qs,
              packed ? G : 0,
              me.blas,
              me.chunks);
      }
      team.barrier();
      if (decodeRows > 0) { // every row's product input in BF16, whichever path takes it
        for (int t = rows[0]; t < rows[1]; t++) Kernels.roundToBf16(attn, t * qs, qs);
        team.barrier();
      }
      // O_PROJ, residual
      product(m, M, s, li, l.o(), attn, qs, packed, x, true, kern, 4, slot++, false);
      team.barrier();
      // POST_NORM
      for (int t = rows[0]; t < rows[1]; t++) {
        Kernels.normRow(x, t * H, H, l.mlpNorm(), md.eps, h, t * hs, packed && t < G);
        if (decodeRows > 0) Kernels.roundToBf16(h, t * hs, hs);
      }
      team.barrier();
      // GATE_UP_PROJ and SWIGLU: the kernels' members apply it to the rows they computed
      int pair = 2 * Model.GATE_UP_BLOCK;
      product(m, M, s, li, l.gateUp(), h, hs, packed, gu, false, kern, pair, slot++, true);
      team.barrier();
      // DOWN_PROJ, residual
      int as = Activations.stride(md.inter, packed);
      product(m, M, s, li, l.down(), act, as, packed, x, true, kern, 4, slot++, false);
    }
    team.barrier();
    // final norm of the rows whose logits are wanted, then the LM head: every row by the step's
    // rule (on oneDNN's bits, kernels or oneDNN by the row count; else the FP32 path)
    int R = s.logitRows.length, rs = Activations.stride(H, headPacked);
    int[] rr = Team.share(R, M, m, 1);
    for (int r = rr[0]; r < rr[1]; r++) {
      Kernels.normRow(x, s.logitRows[r] * H, H, md.finalNorm, md.eps, xr, r * rs, headPacked);
      if (decodeRows > 0) Kernels.roundToBf16(xr, r * rs, rs);
    }
    team.barrier();
    if (headOnDnn(R)) {
      if (m == 0) bf16.product(md.lmHead, xr, 0, R, logits, false);
    } else
      for (int[] piece = new int[2]; claim(m, md.lmHead, headKern, 4, M, slot, piece); )
        if (headKern) md.lmHead.product(xr, R, logits, md.vocab, 0, piece[0], piece[1], false);
        else members[m].blas.product(md.lmHead, xr, R, logits, false, piece[0], piece[1]);
    team.barrier();
    for (int r = rr[0]; r < rr[1]; r++)
      out[r] = Arrays.copyOfRange(logits, r * md.vocab, (r + 1) * md.vocab);
  }

  /**
   * {@code y (+)= xin · Wᵀ} for the pieces of W's rows this member claims from counter {@code
   * slot}, on the kernels or on its own single-threaded OpenBLAS; in a step that runs a LoRA
   * adapter, for this member's static share instead, so it computes each adapter's {@code A x}
   * once. With {@code swiglu} (the gate/up product) the member also applies SwiGLU to the rows it
   * computed.
   */
  private void product(
      int m,
      int M,
      Step s,
      int li,
      Matrix w,
      float[] xin,
      int xStride,
      boolean packed,
      float[] y,
      boolean add,
      boolean kern,
      int align,
      int slot,
      boolean swiglu) {
    int T = s.tokens.length, G = s.fp32Rows;
    // the FP32 rows [0, G): kernels or OpenBLAS, by claimed pieces, or by static shares with LoRA
    if (G > 0 && s.anyAdapter) {
      int[] r = Team.share(w.out, M, m, Math.max(align, Matrix.GROUP)); // whole groups
      rows(m, w, xin, G, y, add, kern, r[0], r[1]);
      lora(m, s, li, w, xin, xStride, packed, y, r[0], r[1], 0, G);
      if (swiglu) swiglu(m, 0, G, r[0], r[1], packed);
    } else if (G > 0)
      for (int[] piece = new int[2]; claim(m, w, kern, align, M, slot, piece); ) {
        rows(m, w, xin, G, y, add, kern, piece[0], piece[1]);
        if (swiglu) swiglu(m, 0, G, piece[0], piece[1], packed);
      }
    if (G == T) return;
    // the prompt rows [G, T): one oneDNN call on its own threads (member 0, once its pieces are
    // done: other rows of y); then each member adapts and activates its share
    if (m == 0) bf16.product(w, xin, G, T - G, y, add);
    if (!s.anyAdapter && !swiglu) return; // the next phase's barrier orders the product
    team.barrier();
    int[] r = Team.share(w.out, M, m, Math.max(align, Matrix.GROUP));
    if (s.anyAdapter) lora(m, s, li, w, xin, xStride, false, y, r[0], r[1], G, T);
    if (swiglu) swiglu(m, G, T, r[0], r[1], false);
  }

  /**
   * Whether the LM head's {@code rows} run on oneDNN: with generated rows on BF16 arithmetic
   * ({@link #decodeRows}), as many as would send generated rows there (fewer are on the kernels,
   * with the same bits).
   */
  private boolean headOnDnn(int rows) {
    return decodeRows > 0 && rows >= decodeRows;
  }

  /**
   * {@link Bf16Gemm#available}, false where oneDNN's classes are not on the classpath (the GPU test
   * bundle leaves them out): linking {@code Bf16Gemm} then fails before its own probe can run.
   */
  private static boolean bf16GemmAvailable() {
    try {
      return Bf16Gemm.available();
    } catch (LinkageError e) {
      return false;
    }
  }

  /**
   * Whether every product of the model can run on oneDNN ({@link Bf16Gemm#handles}: BF16, widths
   * multiples of 32); otherwise no row does, and every step is on the FP32 path as one range.
   */
  private static boolean allOnOneDnn(Model md) {
    if (!Bf16Gemm.handles(md.lmHead)) return false;
    for (Model.Layer l : md.layers)
      for (Matrix w : new Matrix[] {l.qkv(), l.o(), l.gateUp(), l.down()})
        if (!Bf16Gemm.handles(w)) return false;
    return true;
  }

  /** Output rows {@code [o0, o1)} of the product on the kernels or on member m's BLAS. */
  private void rows(
      int m, Matrix w, float[] xin, int T, float[] y, boolean add, boolean kern, int o0, int o1) {
    if (kern) w.product(xin, T, y, w.out, 0, o0, o1, add);
    else members[m].blas.product(w, xin, T, y, add, o0, o1);
  }

  /**
   * Claims the next piece of {@code w}'s output rows from counter {@code slot} into {@code piece}
   * ({@code [from, to)}); false when none is left.
   */
  private boolean claim(
      int m, Matrix w, boolean kern, int align, int members, int slot, int[] piece) {
    int rows =
        kern
            ? pieceRows(w.out, w.in, Math.max(align, Matrix.GROUP), members)
            : gemmRows(w.out, align, members);
    int p = claims.claim(slot, m, (w.out + rows - 1) / rows);
    if (p < 0) return false;
    int from = p * rows;
    piece[0] = from;
    piece[1] = Math.min(w.out, from + rows);
    return true;
  }

  /**
   * Output rows per claimed piece: about {@link #PIECE_BYTES} of 16-bit weights, and at least 4
   * pieces per member so that the last piece is small against the product (the small model's o
   * product is 512 rows); a multiple of {@code align} (whole {@link Matrix#GROUP}s: a piece that
   * splits a group computes all of it).
   */
  static int pieceRows(int out, int in, int align, int members) {
    long rows = Math.min(PIECE_BYTES / (2L * Math.max(1, in)), out / (4L * members));
    return (int) Math.max(align, rows / align * align);
  }

  /**
   * Output rows per claimed piece of a GEMM: 4 pieces per member (not tuned), a multiple of {@code
   * align}.
   */
  static int gemmRows(int out, int align, int members) {
    long rows = (out + 4L * members - 1) / (4L * members);
    return (int) Math.max(align, (rows + align - 1) / align * align);
  }

  /**
   * SwiGLU of tokens {@code [t0, t1)} over the gate/up rows {@code [f0, f1)} (whole gate + up block
   * pairs) into {@code act}.
   */
  private void swiglu(int m, int t0, int t1, int f0, int f1, boolean packed) {
    int pair = 2 * Model.GATE_UP_BLOCK, as = Activations.stride(md.inter, packed);
    for (int t = t0; t < t1; t++)
      for (int f = f0; f < f1; f += pair) {
        int g0 = f / 2, n = Math.min(Model.GATE_UP_BLOCK, md.inter - g0);
        int base = t * 2 * md.inter + f;
        Kernels.swiglu(
            gu,
            base,
            gu,
            base + n,
            n,
            members[m].tmp,
            act,
            t * as,
            g0,
            md.inter,
            packed,
            decodeRows > 0);
      }
  }

  /**
   * Adds {@code scale · B (A x)} to outputs {@code [o0, o1)} of rows {@code [t0, t1)} running an
   * adapter ({@code xin}'s rows there packed or not).
   */
  private void lora(
      int m,
      Step s,
      int li,
      Matrix w,
      float[] xin,
      int xStride,
      boolean packed,
      float[] y,
      int o0,
      int o1,
      int t0,
      int t1) {
    Model.Layer l = md.layers[li];
    float[] row = members[m].row;
    for (int t = t0; t < t1; t++) {
      Lora a = s.adapters[t];
      if (a == null) continue;
      Activations.get(xin, t * xStride, w.in, row, 0, packed);
      float[][] ax = new float[Projection.values().length][];
      for (int o = o0; o < o1; o++) {
        Projection p;
        int j;
        if (w == l.qkv()) {
          p = o < md.qDim ? Projection.Q : o < md.qDim + md.kvDim ? Projection.K : Projection.V;
          j = p == Projection.Q ? o : p == Projection.K ? o - md.qDim : o - md.qDim - md.kvDim;
        } else if (w == l.gateUp()) {
          int g = Matrix.gateUpRow(o, md.inter, Model.GATE_UP_BLOCK);
          p = g >= 0 ? Projection.GATE : Projection.UP;
          j = g >= 0 ? g : -1 - g;
        } else {
          p = w == l.o() ? Projection.O : Projection.DOWN;
          j = o;
        }
        if (!a.covers(li, p)) continue;
        if (ax[p.ordinal()] == null) ax[p.ordinal()] = a.project(li, p, row, 0, w.in);
        y[t * w.out + o] += a.delta(li, p, j, ax[p.ordinal()]);
      }
    }
  }

  /** Bias, q/k norm, RoPE of token t's q and k, and its k, v into the cache. */
  private void prepare(int m, Step s, int t, Model.Layer l, int stride) {
    int base = t * stride, d = md.headDim;
    if (l.qkvBias() != null) for (int i = 0; i < stride; i++) qkv[base + i] += l.qkvBias()[i];
    if (l.qNorm() != null) {
      for (int hh = 0; hh < md.nHeads; hh++)
        Kernels.normInPlace(qkv, base + hh * d, d, l.qNorm(), md.eps);
      for (int g = 0; g < md.nKv; g++)
        Kernels.normInPlace(qkv, base + md.qDim + g * d, d, l.kNorm(), md.eps);
    }
    for (int hh = 0; hh < md.nHeads; hh++) RopeTables.rotate(qkv, base + hh * d, d, angles, t * d);
    for (int g = 0; g < md.nKv; g++)
      RopeTables.rotate(qkv, base + md.qDim + g * d, d, angles, t * d);
    attention.store(
        qkv, base + md.qDim, base + md.qDim + md.kvDim, l.kCache(), l.vCache(), s.slots[t]);
  }

  private static float[] grow(float[] a, long n) {
    if (n > Integer.MAX_VALUE - 8)
      throw new IllegalArgumentException("batch too large for one step: " + n + " activations");
    return a.length >= n ? a : new float[(int) Math.max(n, a.length * 3L / 2)];
  }

  @Override
  public void close() {
    for (Member me : members) me.blas.close();
    if (bf16 != null) bf16.close();
  }
}
