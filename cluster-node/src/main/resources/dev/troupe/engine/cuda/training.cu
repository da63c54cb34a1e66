// Troupe's CUDA kernels for training (engine.cuda.CudaTrainer): compiled as one source with
// kernels.cu, after it (KernelSource.java), so the prelude's #defines and kernels.cu's helpers
// (bf16 conversions, warp and block reductions) are in scope. The same rules as there: plain CUDA
// that also compiles as C++ against the emulation header, full warps at every shuffle, every
// __syncthreads reached by all threads of the block.
//
// A row of T tokens holds segments (histories) end to end, positions restarting at 0 in each, and
// attention is causal within a segment (and Mistral's window): row t sees the keys [lo(t), t],
// lo(t) = max(seg_start[t], t - window + 1) (window > 0). The base weights are frozen: gradients flow to the
// activations and the LoRA products only (those are cuBLAS products, not kernels here). Forward
// steps the serving kernels do the same way are reused: embed_rows, add_rmsnorm, qkv_rope_cache
// (with slots[t] = t, so the "cache" is the row's own k and v), silu_mul.

// x[i] += y[i], n elements, grid-stride (pointer arguments are 8 bytes, counts 4). block 256.
extern "C" __global__ void add_f32(float* x, const float* y, int n) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x)
    x[i] += y[i];
}

// x[i] = v, n elements, grid-stride. block 256.
extern "C" __global__ void fill_f32(float* x, float v, int n) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x)
    x[i] = v;
}

// y[i] = bf16(x[i]) (round to nearest even), n elements, grid-stride. block 256.
extern "C" __global__ void f32_to_bf16(const float* x, bf16_t* y, int n) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x)
    y[i] = f2bf(x[i]);
}

// RMSNorm backward with a frozen gain, for output row r (input row rows[r], or r when rows is
// null): inv = 1/sqrt(mean(x²) + eps) as add_rmsnorm computed it, xhat = x·inv, g = dy ∘ w, and
// dx[row] += inv·(g − xhat·mean(g ∘ xhat)). dy [R, hidden]; x, dx [T, hidden], all fp32.
// grid R, block 256.
extern "C" __global__ void rmsnorm_bwd(const float* dy, const float* x, const bf16_t* w, float* dx,
                                       const int* rows, int hidden, float eps) {
  __shared__ float red[WARP];
  int r = blockIdx.x;
  int row = rows ? rows[r] : r;
  const float* xr = x + (size_t)row * hidden;
  const float* d = dy + (size_t)r * hidden;
  float ss = 0.0f;
  for (int i = threadIdx.x; i < hidden; i += blockDim.x) ss += xr[i] * xr[i];
  float inv = rsqrtf(block_sum(ss, red) / hidden + eps);
  float dot = 0.0f;
  for (int i = threadIdx.x; i < hidden; i += blockDim.x) dot += d[i] * bf2f(w[i]) * xr[i] * inv;
  dot = block_sum(dot, red) / hidden;
  float* o = dx + (size_t)row * hidden;
  for (int i = threadIdx.x; i < hidden; i += blockDim.x)
    o[i] += inv * (d[i] * bf2f(w[i]) - xr[i] * inv * dot);
}

// SwiGLU backward: from da [T, inter] fp32 and gu [T, 2·inter] fp32 (gate, then up) to dgu
// [T, 2·inter] bf16: d gate = da·up·silu'(gate), silu'(g) = σ(g)·(1 + g·(1 − σ(g))); d up =
// da·silu(gate). grid T, block 256.
extern "C" __global__ void silu_mul_bwd(const float* da, const float* gu, bf16_t* dgu, int inter) {
  int t = blockIdx.x;
  const float* g = gu + (size_t)t * 2 * inter;
  bf16_t* o = dgu + (size_t)t * 2 * inter;
  for (int i = threadIdx.x; i < inter; i += blockDim.x) {
    float x = g[i], u = g[inter + i], d = da[(size_t)t * inter + i];
    float s = 1.0f / (1.0f + expf(-x));
    o[i] = f2bf(d * u * s * (1.0f + x * (1.0f - s)));
    o[inter + i] = f2bf(d * x * s);
  }
}

// Backward of qkv_rope_cache for training rows: from dq [T, Q_DIM], dk, dv [T, KV_DIM] (fp32) to
// d(qkv) [T, QKV_DIM] bf16, the gradient at the q/k/v product's output (the bias is frozen): the
// transposed rotation (by −θ), then the per-head RMSNorm backward (Qwen3; the pre-norm values are
// recomputed from qkv + bias), v passed through. One warp per head. grid T, block 128.
extern "C" __global__ void qkv_rope_bwd(const float* qkv, const float* bias, const bf16_t* q_norm,
                                        const bf16_t* k_norm, const int* pos,
                                        const float* rope_cos, const float* rope_sin,
                                        const float* dq, const float* dk, const float* dv,
                                        bf16_t* dqkv, float eps) {
  __shared__ float buf[4][HEAD_DIM];
  int t = blockIdx.x, lane = threadIdx.x & (WARP - 1), w = threadIdx.x / WARP;
  int nw = blockDim.x / WARP;
  const float* row = qkv + (size_t)t * QKV_DIM;
  const float* cs = rope_cos + (size_t)pos[t] * HALF_DIM;
  const float* sn = rope_sin + (size_t)pos[t] * HALF_DIM;
  for (int h = w; h < N_HEADS + 2 * N_KV_HEADS; h += nw) { // warp-uniform loop
    int base = h * HEAD_DIM;
    bool is_q = h < N_HEADS, is_v = h >= N_HEADS + N_KV_HEADS;
    const float* src = is_q   ? dq + (size_t)t * Q_DIM + base
                       : is_v ? dv + (size_t)t * KV_DIM + (h - N_HEADS - N_KV_HEADS) * HEAD_DIM
                              : dk + (size_t)t * KV_DIM + (h - N_HEADS) * HEAD_DIM;
    bf16_t* dst = dqkv + (size_t)t * QKV_DIM + base;
    if (is_v) {
      for (int j = 0; j < EPL; j++) {
        int i = lane + j * WARP;
        if (i < HEAD_DIM) dst[i] = f2bf(src[i]);
      }
      continue;
    }
    for (int j = 0; j < EPL; j++) {
      int i = lane + j * WARP;
      if (i < HEAD_DIM) buf[w][i] = src[i];
    }
    __syncwarp();
    // the rotation's transpose: d1 = g1 cos + g2 sin, d2 = g2 cos − g1 sin
    float dn[EPL];
    for (int j = 0; j < EPL; j++) {
      int i = lane + j * WARP;
      dn[j] = 0.0f;
      if (i < HALF_DIM) dn[j] = buf[w][i] * cs[i] + buf[w][i + HALF_DIM] * sn[i];
      else if (i < HEAD_DIM)
        dn[j] = buf[w][i] * cs[i - HALF_DIM] - buf[w][i - HALF_DIM] * sn[i - HALF_DIM];
    }
    __syncwarp(); // buf is rewritten by this warp's next head
#if HAS_QK_NORM
    const bf16_t* g8 = is_q ? q_norm : k_norm;
    float xv[EPL];
    float ss = 0.0f;
    for (int j = 0; j < EPL; j++) {
      int i = lane + j * WARP;
      float a = 0.0f;
      if (i < HEAD_DIM) {
        a = row[base + i];
#if HAS_QKV_BIAS
        a += bias[base + i];
#endif
      }
      xv[j] = a;
      ss += a * a;
    }
    float inv = rsqrtf(warp_sum(ss) / HEAD_DIM + eps);
    float dot = 0.0f;
    for (int j = 0; j < EPL; j++) {
      int i = lane + j * WARP;
      if (i < HEAD_DIM) dot += dn[j] * bf2f(g8[i]) * xv[j] * inv;
    }
    dot = warp_sum(dot) / HEAD_DIM;
    for (int j = 0; j < EPL; j++) {
      int i = lane + j * WARP;
      if (i < HEAD_DIM) dst[i] = f2bf(inv * (dn[j] * bf2f(g8[i]) - xv[j] * inv * dot));
    }
#else
    for (int j = 0; j < EPL; j++) {
      int i = lane + j * WARP;
      if (i < HEAD_DIM) dst[i] = f2bf(dn[j]);
    }
#endif
  }
}

__device__ __forceinline__ int train_lo(const int* seg_start, int t, int window) {
  int lo = seg_start[t];
  return window > 0 && t - window + 1 > lo ? t - window + 1 : lo;
}

// Training attention runs on cuBLAS (TrainingAttention.java): per head the scores S = scale·Q Kᵀ
// and the products with P and dS are strided-batched GEMMs over a block of query rows [r0, r0 + R)
// and the keys [0, n) (n ≥ r0 + R: causality hides the rest), one [R, n] matrix per head of the
// block, heads one after another. These two kernels are the row-wise steps between the products.

// Softmax of one score row under the row's mask: query row t = r0 + blockIdx.x, head block row
// blockIdx.y; s [heads][R][n] fp32 (already scaled), p the same shape in bf16 = exp(s − lse) over
// the keys [lo(t), t] and 0 elsewhere. grid (R, heads of the block), block 256.
extern "C" __global__ void attention_probs(const float* s, bf16_t* p, const int* seg_start,
                                           int window, int r0, int n) {
  __shared__ float red[WARP];
  int t = r0 + blockIdx.x;
  size_t at = ((size_t)blockIdx.y * gridDim.x + blockIdx.x) * n;
  const float* sr = s + at;
  bf16_t* pr = p + at;
  int lo = train_lo(seg_start, t, window);
  float mx = NEG_INF;
  for (int j = lo + threadIdx.x; j <= t; j += blockDim.x) mx = fmaxf(mx, sr[j]);
  mx = block_max(mx, red);
  float sum = 0.0f;
  for (int j = lo + threadIdx.x; j <= t; j += blockDim.x) sum += expf(sr[j] - mx);
  float lse = mx + logf(block_sum(sum, red)); // t itself is always seen: sum ≥ 1
  for (int j = threadIdx.x; j < n; j += blockDim.x)
    pr[j] = f2bf(j >= lo && j <= t ? expf(sr[j] - lse) : 0.0f);
}

// Softmax backward of one row (as attention_probs' grid): with D = dO_t·O_t for its head (fp32 d_o
// and o32 [T, Q_DIM]), dS = P ∘ (dP − D) · scale written over p (bf16), dP [heads][R][n] fp32 the
// product dO Vᵀ. Masked keys have P = 0, so dS = 0 there. grid (R, heads of the block), block 256.
extern "C" __global__ void attention_dscores(const float* dp, bf16_t* p, const float* d_o,
                                             const float* o32, int r0, int head0, int n,
                                             float scale) {
  __shared__ float red[WARP];
  int t = r0 + blockIdx.x, h = head0 + blockIdx.y;
  size_t at = ((size_t)blockIdx.y * gridDim.x + blockIdx.x) * n;
  const float* dpr = dp + at;
  bf16_t* pr = p + at;
  const float* dot = d_o + (size_t)t * Q_DIM + (size_t)h * HEAD_DIM;
  const float* ot = o32 + (size_t)t * Q_DIM + (size_t)h * HEAD_DIM;
  float d = 0.0f;
  for (int i = threadIdx.x; i < HEAD_DIM; i += blockDim.x) d += dot[i] * ot[i];
  d = block_sum(d, red);
  for (int j = threadIdx.x; j < n; j += blockDim.x)
    pr[j] = f2bf(bf2f(pr[j]) * (dpr[j] - d) * scale);
}

// LM head statistics of n logit rows z [n, vocab] fp32 (row r scores the token tok[r] at row
// position pos[r]): the log-sum-exp (lse_out[r]), the target's log-probability and the entropy
// lse − Σ p·z, written at that position of lp and ent ([T] each). Sums in fp64. grid n, block 256.
extern "C" __global__ void lm_head_fwd(const float* z, int vocab, const int* pos, const int* tok,
                                       float* lse_out, float* lp, float* ent) {
  __shared__ double redd[WARP];
  __shared__ float redf[WARP];
  int r = blockIdx.x;
  const float* zr = z + (size_t)r * vocab;
  float mx = NEG_INF;
  for (int k = threadIdx.x; k < vocab; k += blockDim.x) mx = fmaxf(mx, zr[k]);
  mx = block_max(mx, redf);
  double s = 0.0, sz = 0.0;
  for (int k = threadIdx.x; k < vocab; k += blockDim.x) {
    double e = expf(zr[k] - mx);
    s += e;
    sz += e * zr[k];
  }
  s = block_sum_d(s, redd);
  sz = block_sum_d(sz, redd);
  if (threadIdx.x == 0) {
    double l = mx + log(s);
    lse_out[r] = (float)l;
    lp[pos[r]] = (float)(zr[tok[r]] - l);
    ent[pos[r]] = (float)(l - sz / s);
  }
}

// LM head backward for the rows of lm_head_fwd: dz [n, vocab] bf16 = g·(onehot(tok) − softmax(z)),
// g = dL/dlogprob read at the row's position. grid n, block 256.
extern "C" __global__ void lm_head_bwd(const float* z, int vocab, const int* pos, const int* tok,
                                       const float* lse, const float* g, bf16_t* dz) {
  int r = blockIdx.x;
  const float* zr = z + (size_t)r * vocab;
  bf16_t* o = dz + (size_t)r * vocab;
  float gr = g[pos[r]], l = lse[r];
  int y = tok[r];
  for (int k = threadIdx.x; k < vocab; k += blockDim.x)
    o[k] = f2bf(gr * ((k == y ? 1.0f : 0.0f) - expf(zr[k] - l)));
}

// ART's RL loss of one row and dL/dπ_new (RlLoss.java, in the same order, in fp64), one block.
// Per target t (mask m_t): δ = π_new − π_old (π_old unknown, NaN: δ = 0), ρ_t = exp(δ), ρ^seq =
// exp(mean δ over the target's history), the history being the run [run_start[t], run_end[t]) of
// positions; the level's ratio (0 token, 1 sequence, 2 average, 3 geometric average), the cap,
// the mask outside (lo, hi), A ← A − τ·δ; PPO ℓ = −min(ρA, clip(ρ)A), or CISPO ℓ = −clip(ρ)·A·π_new;
// L = Σ ℓ w m / (Σ m + 1e-6). dp = {lo, hi, cap (NaN: none), τ (NaN: none)}; ip = {T, level, ppo,
// mask_prob_ratio}. Out: g [T] (float), stats {L, Σ H·w·m / Σ m}. scratch: 5·T doubles. A history
// sums its own terms serially in position order (one thread per history), as RlLoss does.
// grid 1, block 256.
extern "C" __global__ void rl_loss(const float* new_lp, const double* old_lp, const double* adv,
                                   const double* wt, const int* mask, const int* run_start,
                                   const int* run_end, const float* ent, const double* dp,
                                   const int* ip, double* scratch, float* g, double* stats) {
  __shared__ double redd[WARP];
  int n = ip[0], level = ip[1], ppo = ip[2], mask_ratio = ip[3];
  double lo = dp[0], hi = dp[1], cap = dp[2], tau = dp[3];
  double* delta = scratch;               // δ_t
  double* run = scratch + n;             // at a history's first position: Σ δ, then Σ seq terms
  double* runc = scratch + 2 * (size_t)n; // at a history's first position: its trainable count
  double* seqc = scratch + 3 * (size_t)n; // per target: its share of the sequence gradient
  double* gtok = scratch + 4 * (size_t)n; // per target: dL/dπ_t without the sequence terms
  double cnt = 0.0;
  for (int t = threadIdx.x; t < n; t += blockDim.x) {
    delta[t] = 0.0;
    if (!mask[t]) continue;
    double old = old_lp[t] != old_lp[t] ? (double)new_lp[t] : old_lp[t];
    delta[t] = (double)new_lp[t] - old;
    cnt += 1.0;
  }
  double trainable = block_sum_d(cnt, redd); // its barriers order the writes above
  double den = trainable + 1e-6;
  for (int t = threadIdx.x; t < n; t += blockDim.x)
    if (run_start[t] == t) {
      double s = 0.0, c = 0.0;
      for (int u = t; u < run_end[t]; u++)
        if (mask[u]) {
          s += delta[u];
          c += 1.0;
        }
      run[t] = s;
      runc[t] = c;
    }
  __syncthreads();
  double loss = 0.0, hsum = 0.0;
  for (int t = threadIdx.x; t < n; t += blockDim.x) {
    seqc[t] = 0.0;
    gtok[t] = 0.0;
    if (!mask[t]) continue;
    int r0 = run_start[t];
    double coef = wt[t] / den;
    double tok = exp(delta[t]), seq = exp(run[r0] / runc[r0]);
    double ratio, d_tok = 0.0, d_seq = 0.0;
    if (level == 0) {
      ratio = tok;
      d_tok = 1.0;
    } else if (level == 1) {
      ratio = seq;
      d_seq = 1.0;
    } else if (level == 2) {
      ratio = (tok + seq) / 2;
      d_tok = 0.5;
      d_seq = 0.5;
    } else {
      ratio = sqrt(tok) * sqrt(seq);
      d_tok = 0.5 * ratio / tok;
      d_seq = 0.5 * ratio / seq;
    }
    double passes = 1.0; // d(modified ratio)/d(ratio)
    if (cap == cap && ratio > cap) {
      ratio = cap;
      passes = 0.0;
    }
    if (mask_ratio && !(ratio > lo && ratio < hi)) {
      ratio = 0.0;
      passes = 0.0;
    }
    double a = adv[t];
    if (tau == tau) a -= tau * delta[t];
    double clipped = fmin(fmax(ratio, lo), hi);
    if (ppo) {
      double un = ratio * a, cl = clipped * a, dl; // d(−min(ρA, clip(ρ)A))/dρ
      bool inside = ratio >= lo && ratio <= hi;
      if (un < cl) dl = -a;
      else if (un > cl) dl = inside ? -a : 0.0;
      else dl = inside ? -a : -a / 2; // a tie: torch splits the gradient between the branches
      loss += -fmin(un, cl) * coef;
      double d_ratio = dl * passes * coef;
      gtok[t] = d_ratio * d_tok * tok;
      if (d_seq != 0.0) seqc[t] = d_ratio * d_seq * seq / runc[r0];
    } else {
      loss += -clipped * a * (double)new_lp[t] * coef;
      gtok[t] = -clipped * a * coef;
    }
    hsum += (double)ent[t] * wt[t];
  }
  loss = block_sum_d(loss, redd);
  hsum = block_sum_d(hsum, redd);
  for (int t = threadIdx.x; t < n; t += blockDim.x)
    if (run_start[t] == t) {
      double s = 0.0;
      for (int u = t; u < run_end[t]; u++) s += mask[u] ? seqc[u] : 0.0;
      run[t] = s;
    }
  __syncthreads();
  for (int t = threadIdx.x; t < n; t += blockDim.x)
    g[t] = mask[t] ? (float)(gtok[t] + run[run_start[t]]) : 0.0f;
  if (threadIdx.x == 0) {
    stats[0] = loss;
    stats[1] = trainable == 0.0 ? 0.0 : hsum / trainable;
  }
}

#define ADAM_BLOCKS 64

// The gradient's squared norm, first half: partial[b] = Σ g² over block b's grid-stride share, in
// fp64. grid ADAM_BLOCKS, block 256.
extern "C" __global__ void grad_sumsq(const float* g, int n, double* partial) {
  __shared__ double redd[WARP];
  double s = 0.0;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x)
    s += (double)g[i] * g[i];
  s = block_sum_d(s, redd);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

// AdamW as torch.optim.AdamW after clip_grad_norm_ (AdamW.java): every block sums the partials in
// the same order (so the same norm everywhere), clip = min(1, max_norm / (norm + 1e-6)) (1 when
// max_norm is 0); per element with gc = g·clip: p ← p − lr·wd·p; m ← β1 m + (1 − β1) gc; v ← β2 v +
// (1 − β2) gc²; p ← p − lr·(m / bc1) / (sqrt(v / bc2) + eps); the bf16 working copy pb follows.
// Block 0 writes the norm before clipping to norm_out. grid ADAM_BLOCKS, block 256.
extern "C" __global__ void adamw_step(float* p, bf16_t* pb, const float* g, float* m, float* v,
                                      int n, const double* partial, float lr, float beta1,
                                      float beta2, float eps, float wd, float max_norm, float bc1,
                                      float bc2, double* norm_out) {
  double ss = 0.0;
  for (int b = 0; b < ADAM_BLOCKS; b++) ss += partial[b];
  double norm = sqrt(ss);
  float clip = max_norm > 0.0f ? (float)fmin(1.0, max_norm / (norm + 1e-6)) : 1.0f;
  if (blockIdx.x == 0 && threadIdx.x == 0) *norm_out = norm;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    float gc = g[i] * clip, x = p[i];
    x -= lr * wd * x;
    float mi = beta1 * m[i] + (1.0f - beta1) * gc;
    float vi = beta2 * v[i] + (1.0f - beta2) * gc * gc;
    x -= lr * (mi / bc1) / (sqrtf(vi / bc2) + eps);
    m[i] = mi;
    v[i] = vi;
    p[i] = x;
    pb[i] = f2bf(x);
  }
}
