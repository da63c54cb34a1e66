// Troupe's CUDA kernels for the decoder forward (engine.cuda). Compiled at model load by NVRTC for the
// device's own architecture, after a prelude of #defines generated per model (KernelSource.java):
// HEAD_DIM, N_HEADS, N_KV_HEADS, GROUP, KV_BLOCK, ATT_WARPS, HAS_QKV_BIAS, HAS_QK_NORM.
//
// Written to compile both as CUDA C (NVRTC, no headers needed) and as C++ against the CPU emulation
// header used by the tests (cluster-node/src/test/resources/.../emu/cuda_emu.h), so every rule here is
// plain CUDA: no CUDA headers, bfloat16 is handled as its 16 bits (unsigned short) with our own
// round-to-nearest-even conversion, every shuffle is executed by full warps, and every __syncthreads
// is reached by all threads of the block.
//
// Layouts (row-major): activations x [T, hidden] fp32 (the residual stream stays fp32), normed inputs
// of the products bf16, KV cache per layer [numBlocks * KV_BLOCK, N_KV_HEADS, HEAD_DIM] bf16, block
// tables int32 packed per chunk; T = tokens of the step (prefill chunks and decode tokens mixed).

typedef unsigned short bf16_t;

#define WARP 32
#define HALF_DIM (HEAD_DIM / 2)
#define EPL ((HEAD_DIM + WARP - 1) / WARP) // head elements per lane
#define Q_DIM (N_HEADS * HEAD_DIM)
#define KV_DIM (N_KV_HEADS * HEAD_DIM)
#define QKV_DIM (Q_DIM + 2 * KV_DIM)

__device__ __forceinline__ float bf2f(bf16_t h) { return __uint_as_float(((unsigned)h) << 16); }

__device__ __forceinline__ bf16_t f2bf(float f) {
  unsigned u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (bf16_t)((u >> 16) | 0x40u); // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);                                           // round to nearest even
  return (bf16_t)(u >> 16);
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = WARP / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
  for (int o = WARP / 2; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Sum over the block (blockDim.x a multiple of 32, at most 1024); every thread gets the result.
__device__ float block_sum(float v, float* red) {
  int lane = threadIdx.x & (WARP - 1), w = threadIdx.x / WARP, nw = blockDim.x / WARP;
  v = warp_sum(v);
  if (lane == 0) red[w] = v;
  __syncthreads();
  float t = lane < nw ? red[lane] : 0.0f;
  t = warp_sum(t);
  __syncthreads(); // red is reused by the next call
  return t;
}

// x[t] = embedding row of tokens[t] (fp32 residual stream). grid T, block 256.
extern "C" __global__ void embed_rows(const int* __restrict__ tokens, const bf16_t* __restrict__ emb,
                                      float* __restrict__ x, int hidden) {
  int t = blockIdx.x;
  const bf16_t* e = emb + (size_t)tokens[t] * hidden;
  float* o = x + (size_t)t * hidden;
  for (int i = threadIdx.x; i < hidden; i += blockDim.x) o[i] = bf2f(e[i]);
}

// Residual add fused with RMSNorm: for output row r (input row rows[r], or r when rows is null)
// x[row] += add[row] (when add is not null, written back), then out[r] = bf16(x[row] * inv_rms * w).
// The pointers never alias (__restrict__), so a thread's loads of the next elements need not wait
// for its store of this one: a one-block row at batch 1 is bound by that latency.
// grid R, block 256.
extern "C" __global__ void add_rmsnorm(float* __restrict__ x, const float* __restrict__ add,
                                       const bf16_t* __restrict__ w, bf16_t* __restrict__ out,
                                       const int* __restrict__ rows, int hidden, float eps) {
  __shared__ float red[WARP];
  int r = blockIdx.x;
  int row = rows ? rows[r] : r;
  float* xr = x + (size_t)row * hidden;
  const float* ar = add ? add + (size_t)row * hidden : 0;
  float ss = 0.0f;
  for (int i = threadIdx.x; i < hidden; i += blockDim.x) {
    float v = xr[i];
    if (ar) {
      v += ar[i];
      xr[i] = v;
    }
    ss += v * v;
  }
  float inv = rsqrtf(block_sum(ss, red) / hidden + eps);
  bf16_t* o = out + (size_t)r * hidden;
  for (int i = threadIdx.x; i < hidden; i += blockDim.x) o[i] = f2bf(xr[i] * inv * bf2f(w[i]));
}

// Per token: q/k/v bias (Qwen2), per-head q/k RMSNorm (Qwen3), RoPE on q and k (rotate_half pairs
// i, i + HEAD_DIM/2, cos/sin from the host-made table [position, HEAD_DIM/2]), k and v written into
// the paged cache at slots[t], q written to q_out [T, Q_DIM] fp32. One warp per head, the heads of
// a row spread over gridDim.y blocks (KernelSource.qkvBlocks: a batch-1 step is not one block).
// grid (T, blocks per row), block 128.
extern "C" __global__ void qkv_rope_cache(const float* qkv, const float* bias, const bf16_t* q_norm,
                                          const bf16_t* k_norm, const int* pos, const int* slots,
                                          const float* rope_cos, const float* rope_sin, float* q_out,
                                          bf16_t* k_cache, bf16_t* v_cache, float eps) {
  __shared__ float buf[4][HEAD_DIM];
  int t = blockIdx.x, lane = threadIdx.x & (WARP - 1), w = threadIdx.x / WARP;
  int nw = blockDim.x / WARP;
  const float* row = qkv + (size_t)t * QKV_DIM;
  const float* cs = rope_cos + (size_t)pos[t] * HALF_DIM;
  const float* sn = rope_sin + (size_t)pos[t] * HALF_DIM;
  size_t slot = (size_t)slots[t];
  for (int h = blockIdx.y * nw + w; h < N_HEADS + 2 * N_KV_HEADS; h += gridDim.y * nw) { // warp-uniform
    int base = h * HEAD_DIM;                                 // q heads, then k heads, then v heads
    bool is_q = h < N_HEADS, is_v = h >= N_HEADS + N_KV_HEADS;
    float v[EPL];
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
      v[j] = a;
      ss += a * a;
    }
#if HAS_QK_NORM
    if (!is_v) {
      float inv = rsqrtf(warp_sum(ss) / HEAD_DIM + eps);
      const bf16_t* nw8 = is_q ? q_norm : k_norm;
      for (int j = 0; j < EPL; j++) {
        int i = lane + j * WARP;
        if (i < HEAD_DIM) v[j] = v[j] * inv * bf2f(nw8[i]);
      }
    }
#endif
    if (is_v) {
      bf16_t* dst = v_cache + (slot * N_KV_HEADS + (h - N_HEADS - N_KV_HEADS)) * HEAD_DIM;
      for (int j = 0; j < EPL; j++) {
        int i = lane + j * WARP;
        if (i < HEAD_DIM) dst[i] = f2bf(v[j]);
      }
      continue;
    }
    for (int j = 0; j < EPL; j++) {
      int i = lane + j * WARP;
      if (i < HEAD_DIM) buf[w][i] = v[j];
    }
    __syncwarp();
    float rot[EPL];
    for (int j = 0; j < EPL; j++) {
      int i = lane + j * WARP;
      rot[j] = 0.0f;
      if (i < HALF_DIM) rot[j] = buf[w][i] * cs[i] - buf[w][i + HALF_DIM] * sn[i];
      else if (i < HEAD_DIM)
        rot[j] = buf[w][i] * cs[i - HALF_DIM] + buf[w][i - HALF_DIM] * sn[i - HALF_DIM];
    }
    __syncwarp(); // buf is rewritten by this warp's next head
    if (is_q) {
      float* dst = q_out + (size_t)t * Q_DIM + base;
      for (int j = 0; j < EPL; j++) {
        int i = lane + j * WARP;
        if (i < HEAD_DIM) dst[i] = rot[j];
      }
    } else {
      bf16_t* dst = k_cache + (slot * N_KV_HEADS + (h - N_HEADS)) * HEAD_DIM;
      for (int j = 0; j < EPL; j++) {
        int i = lane + j * WARP;
        if (i < HEAD_DIM) dst[i] = f2bf(rot[j]);
      }
    }
  }
}

// Paged attention for any mix of prefill chunks and decode tokens: query row t attends to positions
// [lo, pos[t]] of its sequence (lo = pos - window + 1 with a sliding window, else 0), whose keys and
// values are already in the cache (this step's chunk included, written by qkv_rope_cache). One block
// per (row, KV head) serves the GROUP query heads sharing that KV head (GQA).
//
// The positions fall in partitions of ATT_PART fixed by absolute position ([j * ATT_PART, (j + 1) *
// ATT_PART)). Within a partition the ATT_WARPS warps take runs of ATT_POS consecutive positions
// round-robin — a run's table entries, keys and values loaded together and its ATT_POS × GROUP dot
// products reduced side by side — each warp keeping an online softmax (running max, sum, weighted
// values in fp32); the warps are merged into the partition's (max, sum, values), and the partitions
// into the row's, in partition order (merge_state). Either one block walks all of its row's
// partitions (split = 1), or — steps of few rows, where a long context would leave most of the GPU
// idle — block z of split takes partition lo / ATT_PART + z alone and writes its state to part, and
// attention_merge merges them; a row with one partition is written directly either way. The same
// arithmetic in the same order both ways (explicit fmaf), so a row's result does not depend on the
// step it runs in. Block tables: row t reads table + table_off[t] (block ids).
// grid (T, N_KV_HEADS * split), block ATT_WARPS * 32; part [T, split, N_HEADS, HEAD_DIM + 2] fp32.

// (m, l, acc) ← the merge of (m, l, acc) and a later part (pm, pl, pacc): max, rescaled sum and
// values. m = -inf: nothing merged yet. One definition for both ways of running attention.
__device__ __forceinline__ void merge_scales(float m, float pm, float* mn, float* cr, float* cp) {
  *mn = fmaxf(m, pm);
  *cr = m == -INFINITY ? 0.0f : expf(m - *mn);
  *cp = pm == -INFINITY ? 0.0f : expf(pm - *mn);
}

__device__ __forceinline__ float merged(float v, float cr, float pv, float cp) {
  return fmaf(v, cr, pv * cp);
}

extern "C" __global__ void attention(const float* q, const bf16_t* k_cache, const bf16_t* v_cache,
                                     const int* pos, const int* tables, const int* table_off,
                                     int window, float scale, bf16_t* out, float* part, int split) {
  __shared__ float s_m[ATT_WARPS][GROUP];
  __shared__ float s_l[ATT_WARPS][GROUP];
  __shared__ float s_acc[ATT_WARPS][GROUP][HEAD_DIM];
  __shared__ float r_m[GROUP], r_l[GROUP], r_cr[GROUP], r_cp[GROUP], r_pm[GROUP];
  __shared__ float r_acc[GROUP][HEAD_DIM];
  int t = blockIdx.x, g = blockIdx.y % N_KV_HEADS, z = blockIdx.y / N_KV_HEADS;
  int lane = threadIdx.x & (WARP - 1), w = threadIdx.x / WARP;
  int p_end = pos[t];
  int lo = window > 0 && p_end - window + 1 > 0 ? p_end - window + 1 : 0;
  int j0 = lo / ATT_PART, j1 = p_end / ATT_PART, jfirst = j0, jlast = j1;
  if (split > 1) {
    if (j0 + z > j1) return; // block-uniform: this row has fewer partitions
    jfirst = jlast = j0 + z;
  }
  const int* table = tables + table_off[t];
  float qr[GROUP][EPL];
  for (int h = 0; h < GROUP; h++) {
    const float* qh = q + (size_t)t * Q_DIM + (g * GROUP + h) * HEAD_DIM;
    for (int j = 0; j < EPL; j++) {
      int i = lane + j * WARP;
      qr[h][j] = i < HEAD_DIM ? qh[i] * scale : 0.0f;
    }
  }
  for (int k = threadIdx.x; k < GROUP * HEAD_DIM; k += blockDim.x) {
    int h = k / HEAD_DIM, i = k % HEAD_DIM;
    r_acc[h][i] = 0.0f;
    if (i == 0) {
      r_m[h] = -INFINITY;
      r_l[h] = 0.0f;
    }
  }
  for (int jp = jfirst; jp <= jlast; jp++) {
    int a = jp * ATT_PART > lo ? jp * ATT_PART : lo;
    int b = jp * ATT_PART + ATT_PART - 1 < p_end ? jp * ATT_PART + ATT_PART - 1 : p_end;
    float acc[GROUP][EPL], m[GROUP], l[GROUP];
    for (int h = 0; h < GROUP; h++) {
      for (int j = 0; j < EPL; j++) acc[h][j] = 0.0f;
      m[h] = -INFINITY;
      l[h] = 0.0f;
    }
    for (int p0 = a + w * ATT_POS; p0 <= b; p0 += ATT_WARPS * ATT_POS) { // warp-uniform loop
      int n = b - p0 + 1 < ATT_POS ? b - p0 + 1 : ATT_POS; // positions of this run, >= 1
      float kr[ATT_POS][EPL], vr[ATT_POS][EPL];
      for (int u = 0; u < ATT_POS; u++) {
        const bf16_t* kp = 0;
        const bf16_t* vp = 0;
        if (u < n) {
          int p = p0 + u;
          size_t slot = (size_t)table[p / KV_BLOCK] * KV_BLOCK + p % KV_BLOCK;
          kp = k_cache + (slot * N_KV_HEADS + g) * HEAD_DIM;
          vp = v_cache + (slot * N_KV_HEADS + g) * HEAD_DIM;
        }
        for (int j = 0; j < EPL; j++) {
          int i = lane + j * WARP;
          kr[u][j] = kp && i < HEAD_DIM ? bf2f(kp[i]) : 0.0f;
          vr[u][j] = vp && i < HEAD_DIM ? bf2f(vp[i]) : 0.0f;
        }
      }
      for (int h = 0; h < GROUP; h++) {
        float s[ATT_POS];
        for (int u = 0; u < ATT_POS; u++) { // every lane takes part in every reduction
          float d = 0.0f;
          for (int j = 0; j < EPL; j++) d += qr[h][j] * kr[u][j];
          s[u] = warp_sum(d);
        }
        float mn = m[h];
        for (int u = 0; u < n; u++) mn = fmaxf(mn, s[u]);
        float corr = m[h] == -INFINITY ? 0.0f : expf(m[h] - mn);
        l[h] *= corr;
        for (int j = 0; j < EPL; j++) acc[h][j] *= corr;
        for (int u = 0; u < n; u++) {
          float e = expf(s[u] - mn);
          l[h] += e;
          for (int j = 0; j < EPL; j++) acc[h][j] += e * vr[u][j];
        }
        m[h] = mn;
      }
    }
    for (int h = 0; h < GROUP; h++) {
      if (lane == 0) {
        s_m[w][h] = m[h];
        s_l[w][h] = l[h];
      }
      for (int j = 0; j < EPL; j++) {
        int i = lane + j * WARP;
        if (i < HEAD_DIM) s_acc[w][h][i] = acc[h][j];
      }
    }
    __syncthreads();
    // the partition's state (the warps merged in warp order), merged into the row's
    for (int h = threadIdx.x; h < GROUP; h += blockDim.x) {
      float pm = -INFINITY, pl = 0.0f;
      for (int ww = 0; ww < ATT_WARPS; ww++) {
        float mn, cr, cp;
        merge_scales(pm, s_m[ww][h], &mn, &cr, &cp);
        pl = merged(pl, cr, s_l[ww][h], cp);
        pm = mn;
      }
      float mn, cr, cp;
      merge_scales(r_m[h], pm, &mn, &cr, &cp);
      r_l[h] = merged(r_l[h], cr, pl, cp);
      r_m[h] = mn;
      r_cr[h] = cr;
      r_cp[h] = cp;
      r_pm[h] = pm;
    }
    __syncthreads();
    for (int k = threadIdx.x; k < GROUP * HEAD_DIM; k += blockDim.x) {
      int h = k / HEAD_DIM, i = k % HEAD_DIM;
      float pm = -INFINITY, pa = 0.0f;
      for (int ww = 0; ww < ATT_WARPS; ww++) {
        float mn, cr, cp;
        merge_scales(pm, s_m[ww][h], &mn, &cr, &cp);
        pa = merged(pa, cr, s_acc[ww][h][i], cp);
        pm = mn;
      }
      r_acc[h][i] = merged(r_acc[h][i], r_cr[h], pa, r_cp[h]);
    }
    __syncthreads(); // s_* and r_cr/r_cp are rewritten by the next partition
  }
  bool partial = split > 1 && j1 > j0;
  for (int k = threadIdx.x; k < GROUP * HEAD_DIM; k += blockDim.x) {
    int h = k / HEAD_DIM, i = k % HEAD_DIM, head = g * GROUP + h;
    if (partial) {
      float* ps = part + (((size_t)t * split + z) * N_HEADS + head) * (HEAD_DIM + 2);
      ps[2 + i] = r_acc[h][i];
      if (i == 0) {
        ps[0] = r_m[h];
        ps[1] = r_l[h];
      }
    } else {
      out[(size_t)t * Q_DIM + head * HEAD_DIM + i] = f2bf(r_acc[h][i] / r_l[h]);
    }
  }
}

// The rows attention split over blocks (split > 1, more than one partition): their partitions'
// states merged in partition order, as attention merges them when one block walks them all.
// grid (T, N_HEADS), block 128.
extern "C" __global__ void attention_merge(const float* part, const int* pos, int window, int split,
                                           bf16_t* out) {
  int t = blockIdx.x, head = blockIdx.y;
  int p_end = pos[t];
  int lo = window > 0 && p_end - window + 1 > 0 ? p_end - window + 1 : 0;
  int np = p_end / ATT_PART - lo / ATT_PART + 1;
  if (np == 1) return; // written by attention
  for (int i = threadIdx.x; i < HEAD_DIM; i += blockDim.x) {
    float m = -INFINITY, l = 0.0f, a = 0.0f;
    for (int z = 0; z < np; z++) {
      const float* ps = part + (((size_t)t * split + z) * N_HEADS + head) * (HEAD_DIM + 2);
      float mn, cr, cp;
      merge_scales(m, ps[0], &mn, &cr, &cp);
      l = merged(l, cr, ps[1], cp);
      a = merged(a, cr, ps[2 + i], cp);
      m = mn;
    }
    out[(size_t)t * Q_DIM + head * HEAD_DIM + i] = f2bf(a / l);
  }
}

// SwiGLU: a[t, i] = bf16(silu(gate) * up) from gu [T, 2 * inter] (gate_proj rows, then up_proj).
// grid (T, blocks per row: KernelSource.siluBlocks, so that a batch-1 step is not one block), block 256.
extern "C" __global__ void silu_mul(const float* __restrict__ gu, bf16_t* __restrict__ a, int inter) {
  int t = blockIdx.x;
  const float* g = gu + (size_t)t * 2 * inter;
  for (int i = blockIdx.y * blockDim.x + threadIdx.x; i < inter; i += gridDim.y * blockDim.x) {
    float x = g[i];
    a[(size_t)t * inter + i] = f2bf(x / (1.0f + expf(-x)) * g[inter + i]);
  }
}

// LoRA, first half, for the n_mod = gridDim.y modules that read the same x (q/k/v, gate/up, or one
// module): ax[t, m, r] = A_{slot, m} x[t] for rows whose adapter slot row_slot[t] >= 0 covers module
// m (a_ptrs[m * cap + slot] != 0: the (layer, module) tables are consecutive, cap slots each).
// A [rank, in] fp32; x [T, in] bf16; ax [T, n_mod, max_rank]. One warp per output r.
// grid (T, n_mod), block 128.
extern "C" __global__ void lora_shrink(const bf16_t* x, int in, const int* row_slot,
                                       const unsigned long long* a_ptrs, int cap, const int* ranks,
                                       float* ax, int max_rank) {
  int t = blockIdx.x, m = blockIdx.y, lane = threadIdx.x & (WARP - 1), w = threadIdx.x / WARP;
  int slot = row_slot[t];
  if (slot < 0) return; // block-uniform
  unsigned long long ap = a_ptrs[(size_t)m * cap + slot];
  if (ap == 0) return; // block-uniform
  const float* a = (const float*)ap;
  const bf16_t* xr = x + (size_t)t * in;
  float* out = ax + ((size_t)t * gridDim.y + m) * max_rank;
  for (int r = w; r < ranks[slot]; r += blockDim.x / WARP) {
    float d = 0.0f;
    for (int i = lane; i < in; i += WARP) d += a[(size_t)r * in + i] * bf2f(xr[i]);
    d = warp_sum(d);
    if (lane == 0) out[r] = d;
  }
}

// LoRA, second half, for the modules of one lora_shrink: y[t, off_m + o] += scale_slot ·
// (B_{slot, m} ax[t, m])[o] for o < out_m, the modules' outputs side by side in y's row (off_0 = 0,
// off_1 = out0, off_2 = out0 + out1; out1/out2 = 0 when there are fewer modules). B [out, rank]
// fp32. The y-blocks are module 0's ceil(out0 / 256), then module 1's, then module 2's.
// grid (T, those blocks), block 256.
extern "C" __global__ void lora_expand(const float* ax, int max_rank, const int* row_slot,
                                       const unsigned long long* b_ptrs, int cap, const int* ranks,
                                       const float* scales, float* y, int y_stride, int out0,
                                       int out1, int out2) {
  int t = blockIdx.x, by = blockIdx.y, nb = blockDim.x;
  int n_mod = out2 > 0 ? 3 : out1 > 0 ? 2 : 1;
  int b0 = (out0 + nb - 1) / nb, b1 = (out1 + nb - 1) / nb;
  int m = 0, out = out0, off = 0;
  if (by >= b0 + b1) {
    m = 2, out = out2, off = out0 + out1, by -= b0 + b1;
  } else if (by >= b0) {
    m = 1, out = out1, off = out0, by -= b0;
  }
  int o = by * nb + threadIdx.x;
  int slot = row_slot[t];
  if (slot < 0 || o >= out) return;
  unsigned long long bp = b_ptrs[(size_t)m * cap + slot];
  if (bp == 0) return;
  const float* b = (const float*)bp;
  const float* a = ax + ((size_t)t * n_mod + m) * max_rank;
  int rank = ranks[slot];
  float d = 0.0f;
  for (int r = 0; r < rank; r++) d += b[(size_t)o * rank + r] * a[r];
  y[(size_t)t * y_stride + off + o] += scales[slot] * d;
}

// ---- Sampling on the device (one block of SAMPLE_THREADS per row; DeviceSampler.java) ----------
// Per row: the sparse edits the host's sampler state produces (allowed_token_ids, masked ids from
// bad_words/min_tokens, logit_bias, repetition penalty over prompt ∪ output, frequency/presence over
// output counts), in vLLM's order, then greedy argmax (lowest id on ties) or: ÷ temperature,
// weights exp(x - max), min_p (weight < min_p dropped), top_k (weights ≥ the k-th largest stay),
// top_p (a token stays when the mass strictly above it is < top_p of the kept mass), and one
// inverse-CDF draw in token id order with the uniform the host drew from the choice's seeded
// generator. Raw logprobs (of the unprocessed row): the token's, its rank, and the top k by rank.
#define SAMPLE_THREADS 512
#define SAMPLE_CAP 4096 // weights top-k/top-p bisect over in shared memory (16 KB)
#define NEG_INF (-INFINITY)

__device__ __forceinline__ double warp_sum_d(double v) {
  for (int o = WARP / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ double block_sum_d(double v, double* red) {
  int lane = threadIdx.x & (WARP - 1), w = threadIdx.x / WARP, nw = blockDim.x / WARP;
  v = warp_sum_d(v);
  if (lane == 0) red[w] = v;
  __syncthreads();
  double t = lane < nw ? red[lane] : 0.0;
  t = warp_sum_d(t);
  __syncthreads();
  return t;
}

__device__ float block_max(float v, float* red) {
  int lane = threadIdx.x & (WARP - 1), w = threadIdx.x / WARP, nw = blockDim.x / WARP;
  v = warp_max(v);
  if (lane == 0) red[w] = v;
  __syncthreads();
  float t = lane < nw ? red[lane] : NEG_INF;
  t = warp_max(t);
  __syncthreads();
  return t;
}

// (value, id) ordered by larger value, then lower id; id = 0x7fffffff means none.
__device__ __forceinline__ bool outranks(float v, int i, float bv, int bi) {
  return v > bv || (v == bv && i < bi);
}

__device__ void block_best(float* v, int* i, float* redv, int* redi) {
  int lane = threadIdx.x & (WARP - 1), w = threadIdx.x / WARP, nw = blockDim.x / WARP;
  for (int o = WARP / 2; o > 0; o >>= 1) {
    float ov = __shfl_xor_sync(0xffffffffu, *v, o);
    int oi = __shfl_xor_sync(0xffffffffu, *i, o);
    if (outranks(ov, oi, *v, *i)) {
      *v = ov;
      *i = oi;
    }
  }
  if (lane == 0) {
    redv[w] = *v;
    redi[w] = *i;
  }
  __syncthreads();
  *v = lane < nw ? redv[lane] : NEG_INF;
  *i = lane < nw ? redi[lane] : 0x7fffffff;
  for (int o = WARP / 2; o > 0; o >>= 1) {
    float ov = __shfl_xor_sync(0xffffffffu, *v, o);
    int oi = __shfl_xor_sync(0xffffffffu, *i, o);
    if (outranks(ov, oi, *v, *i)) {
      *v = ov;
      *i = oi;
    }
  }
  __syncthreads();
}

// The best entry of x ranked strictly below (pv, pi) (pi < 0: no bound); ties → lowest id.
__device__ int block_argmax_below(const float* x, int n, float pv, int pi, float* redv,
                                  int* redi) {
  float bv = NEG_INF;
  int bi = 0x7fffffff;
  for (int k = threadIdx.x; k < n; k += blockDim.x) {
    float v = x[k];
    if (v != v) continue; // NaN never wins
    if (pi >= 0 && !outranks(pv, pi, v, k)) continue;
    if (bi == 0x7fffffff || outranks(v, k, bv, bi)) {
      bv = v;
      bi = k;
    }
  }
  block_best(&bv, &bi, redv, redi);
  return bi == 0x7fffffff ? 0 : bi;
}

// Copies the weights of x above t (strict) or at or above it into cand, in a fixed order (each
// thread's in its stride order, the threads in turn: an exclusive scan of their counts), and
// returns how many; the caller knows there are at most SAMPLE_CAP. Every thread must call it.
__device__ int compact_weights(const float* x, int vocab, float t, bool strict, float* cand,
                               int* scan) {
  int tid = threadIdx.x, nt = blockDim.x, mine = 0;
  for (int k = tid; k < vocab; k += nt) mine += (strict ? x[k] > t : x[k] >= t) ? 1 : 0;
  scan[tid] = mine;
  __syncthreads();
  for (int off = 1; off < nt; off <<= 1) { // inclusive scan, Hillis-Steele
    int v = tid >= off ? scan[tid - off] : 0;
    __syncthreads();
    scan[tid] += v;
    __syncthreads();
  }
  int at = scan[tid] - mine, total = scan[nt - 1];
  for (int k = tid; k < vocab; k += nt)
    if (strict ? x[k] > t : x[k] >= t) cand[at++] = x[k];
  __syncthreads();
  return total;
}

// Row parameters: ip[r * 11 + ...] = {top_k, logprobs k (-1 none), int offset, float offset,
// n_allowed, n_masked, n_bias, n_seen, n_counts, greedy, source logit row}; fp[r * 4 + ...] =
// {temperature, top_p, min_p, unused}; uniforms[r]; ints at the int offset: allowed ids, masked
// ids, bias ids, seen ids, count ids, counts; floats at the float offset: bias values, repetition,
// frequency, presence. The launch's logits hold the step's logit rows row0, row0 + 1, ...; several
// rows may sample the same logit row (the n choices of a prompt).
extern "C" __global__ void sample_rows(const float* logits, float* work, int vocab, const int* ip,
                                       const float* fp, const double* uniforms, const int* ints,
                                       const float* floats, int* out_token, float* out_logprob,
                                       int* out_rank, int* out_top_ids, float* out_top_lp,
                                       int max_top, int row0) {
  __shared__ double redd[WARP];
  __shared__ float redf[WARP];
  __shared__ int redi[WARP];
  __shared__ double chunk[SAMPLE_THREADS];
  __shared__ int s_token, s_seg;
  __shared__ double s_target, s_cum;
  __shared__ float cand[SAMPLE_CAP];
  __shared__ int scan[SAMPLE_THREADS];
  int r = blockIdx.x, tid = threadIdx.x, nt = blockDim.x;
  const int* p = ip + r * 11;
  const float* raw = logits + (size_t)(p[10] - row0) * vocab;
  float* x = work + (size_t)r * vocab;
  int top_k = p[0], nlp = p[1];
  const int* in = ints + p[2];
  const float* fl = floats + p[3];
  int n_allowed = p[4], n_masked = p[5], n_bias = p[6], n_seen = p[7], n_counts = p[8];
  bool greedy = p[9] != 0;
  float temperature = fp[r * 4], top_p = fp[r * 4 + 1], min_p = fp[r * 4 + 2];
  // 1. edits, each category after the previous (ids within one are distinct)
  if (n_allowed > 0) {
    for (int k = tid; k < vocab; k += nt) x[k] = NEG_INF;
    __syncthreads();
    for (int j = tid; j < n_allowed; j += nt) x[in[j]] = raw[in[j]];
  } else {
    for (int k = tid; k < vocab; k += nt) x[k] = raw[k];
  }
  __syncthreads();
  const int* masked = in + n_allowed;
  for (int j = tid; j < n_masked; j += nt) x[masked[j]] = NEG_INF;
  __syncthreads();
  const int* bias_ids = masked + n_masked;
  for (int j = tid; j < n_bias; j += nt) x[bias_ids[j]] += fl[j];
  __syncthreads();
  float rep = fl[n_bias], freq = fl[n_bias + 1], pres = fl[n_bias + 2];
  const int* seen = bias_ids + n_bias;
  for (int j = tid; j < n_seen; j += nt) {
    float v = x[seen[j]];
    x[seen[j]] = v > 0 ? v / rep : v * rep;
  }
  __syncthreads();
  const int* cid = seen + n_seen;
  const int* cnt = cid + n_counts;
  for (int j = tid; j < n_counts; j += nt) {
    float v = x[cid[j]];
    v -= freq * cnt[j];
    v -= pres;
    x[cid[j]] = v;
  }
  __syncthreads();
  // 2. choose
  int token;
  if (greedy) {
    token = block_argmax_below(x, vocab, 0.0f, -1, redf, redi);
  } else {
    float mx = NEG_INF;
    for (int k = tid; k < vocab; k += nt) {
      float v = x[k] / temperature;
      x[k] = v;
      mx = fmaxf(mx, v);
    }
    mx = block_max(mx, redf);
    if (mx == NEG_INF || mx != mx) {
      token = block_argmax_below(x, vocab, 0.0f, -1, redf, redi);
    } else {
      for (int k = tid; k < vocab; k += nt) {
        float v = x[k];
        float wgt = v == NEG_INF ? 0.0f : expf(v - mx);
        if (wgt < min_p) wgt = 0.0f;
        x[k] = wgt; // weights in (0, 1]; 0 = dropped
      }
      __syncthreads();
      // top-k, then top-p: each a bisection over the bit patterns of positive floats (ordered as
      // the floats), ~30 steps, each counting or summing the weights against a threshold. Once the
      // weights that can still matter (those at or above the bisection's lower end) are at most
      // SAMPLE_CAP, they are copied into shared memory and the remaining steps read only them:
      // with a real model's peaked weights that happens after a few steps, and top-p after top-k
      // starts there (the same thresholds: a weight below the lower end adds nothing to any later
      // step's count or sum).
      if (top_k > 0 && top_k < vocab) {
        // the largest threshold t with count(w >= t) >= k: keeps ties at the k-th value
        unsigned lo = 1, hi = __float_as_uint(1.0f);
        int nc = -1; // weights in cand[0, nc), or -1: the whole row
        while (lo < hi) {
          unsigned mid = lo + (hi - lo + 1) / 2;
          float t = __uint_as_float(mid);
          int c = 0;
          if (nc >= 0)
            for (int j = tid; j < nc; j += nt) c += cand[j] >= t ? 1 : 0;
          else
            for (int k = tid; k < vocab; k += nt) c += x[k] >= t ? 1 : 0;
          double total = block_sum_d((double)c, redd);
          if (total >= top_k) {
            lo = mid;
            if (nc < 0 && total <= SAMPLE_CAP) nc = compact_weights(x, vocab, t, false, cand, scan);
          } else {
            hi = mid - 1;
          }
        }
        float t = __uint_as_float(lo);
        for (int k = tid; k < vocab; k += nt)
          if (x[k] < t) x[k] = 0.0f;
        __syncthreads();
      }
      if (top_p < 1.0f) {
        double z = 0;
        int nz = 0;
        for (int k = tid; k < vocab; k += nt) {
          z += x[k];
          nz += x[k] > 0 ? 1 : 0;
        }
        z = block_sum_d(z, redd);
        int nc = -1;
        if (block_sum_d((double)nz, redd) <= SAMPLE_CAP)
          nc = compact_weights(x, vocab, 0.0f, true, cand, scan);
        // the smallest threshold t with mass(w > t) < top_p · z; tokens with w >= t stay
        unsigned lo = 0, hi = __float_as_uint(1.0f);
        while (lo < hi) {
          unsigned mid = lo + (hi - lo) / 2;
          float t = __uint_as_float(mid);
          double m = 0;
          int c = 0;
          if (nc >= 0) {
            for (int j = tid; j < nc; j += nt) m += cand[j] > t ? (double)cand[j] : 0.0;
          } else {
            for (int k = tid; k < vocab; k += nt)
              if (x[k] > t) {
                m += x[k];
                c++;
              }
          }
          if (block_sum_d(m, redd) < top_p * z) {
            hi = mid;
          } else {
            lo = mid + 1;
            if (nc < 0 && block_sum_d((double)c, redd) <= SAMPLE_CAP)
              nc = compact_weights(x, vocab, t, true, cand, scan);
          }
        }
        float t = __uint_as_float(lo);
        for (int k = tid; k < vocab; k += nt)
          if (x[k] < t) x[k] = 0.0f;
        __syncthreads();
      }
      // inverse CDF in id order, in three levels so that no thread walks far and every pass over
      // the whole row is coalesced: the row in nw contiguous segments, one per warp, each summed
      // by its warp's lanes side by side; the segment the target falls in, split into nt
      // contiguous pieces, one per thread; then that piece element by element. (Before, each thread
      // summed a 297-element piece with strided loads and one thread walked them all; sample_rows
      // took 230 µs of a 3.3 ms batch-1 step on an H200.)
      int nw = nt / WARP, w = tid / WARP, lane = tid & (WARP - 1);
      int seg = ((vocab + nw - 1) / nw + WARP - 1) / WARP * WARP;
      {
        int b0 = w * seg, b1 = b0 + seg < vocab ? b0 + seg : vocab;
        double sw = 0;
        for (int k = b0 + lane; k < b1; k += WARP) sw += x[k];
        sw = warp_sum_d(sw);
        if (lane == 0) chunk[w] = sw;
      }
      __syncthreads();
      if (tid == 0) {
        double total = 0;
        for (int j = 0; j < nw; j++) total += chunk[j];
        double target = uniforms[r] * total, cum = 0;
        int sel = -1;
        for (int j = 0; j < nw && sel < 0; j++) {
          if (chunk[j] <= 0) continue;
          if (cum + chunk[j] <= target) cum += chunk[j];
          else sel = j;
        }
        s_seg = sel;
        s_target = target;
        s_cum = cum;
      }
      __syncthreads(); // chunk[] is reused below
      int sel = s_seg;
      int piece = (seg + nt - 1) / nt;
      int s0 = sel * seg, s1 = s0 + seg < vocab ? s0 + seg : vocab;
      if (sel >= 0) { // block-uniform
        int b0 = s0 + tid * piece, b1 = b0 + piece < s1 ? b0 + piece : s1;
        double sp = 0;
        for (int k = b0; k < b1; k++) sp += x[k];
        chunk[tid] = sp;
      }
      __syncthreads();
      if (tid == 0) {
        int pick = -1;
        if (sel >= 0) {
          double target = s_target, cum = s_cum;
          for (int j = 0; j < nt; j++) {
            if (chunk[j] <= 0) continue;
            if (cum + chunk[j] <= target) {
              cum += chunk[j];
              continue;
            }
            int e0 = s0 + j * piece, e1 = e0 + piece < s1 ? e0 + piece : s1, last = -1;
            for (int k = e0; k < e1; k++) {
              if (x[k] <= 0) continue;
              last = k;
              cum += x[k];
              if (cum > target) {
                pick = k;
                break;
              }
            }
            if (pick < 0) pick = last; // the piece's sum and its walk rounded differently
            break;
          }
          // the segment's sum and its pieces' rounded differently: its last kept token
          for (int k = s1 - 1; k >= s0 && pick < 0; k--)
            if (x[k] > 0) pick = k;
        }
        if (pick < 0) // rounding left the target unreached: the last kept token, as on the CPU
          for (int k = vocab - 1; k >= 0 && pick < 0; k--)
            if (x[k] > 0) pick = k;
        s_token = pick >= 0 ? pick : 0;
      }
      __syncthreads();
      token = s_token;
    }
  }
  if (tid == 0) out_token[r] = token;
  if (nlp < 0) return; // block-uniform
  // 3. raw logprobs: log-softmax of the unprocessed row
  float rmax = NEG_INF;
  for (int k = tid; k < vocab; k += nt) rmax = fmaxf(rmax, raw[k]);
  rmax = block_max(rmax, redf);
  double z = 0;
  float tv = raw[token];
  double rank = 0;
  for (int k = tid; k < vocab; k += nt) {
    z += exp((double)raw[k] - rmax);
    rank += raw[k] >= tv ? 1.0 : 0.0;
  }
  z = block_sum_d(z, redd);
  rank = block_sum_d(rank, redd);
  float lse = (float)(rmax + log(z));
  if (tid == 0) {
    out_logprob[r] = tv - lse;
    out_rank[r] = (int)rank;
  }
  float pv = 0.0f;
  int pi = -1;
  for (int j = 0; j < nlp && j < max_top; j++) {
    int best = block_argmax_below(raw, vocab, pv, pi, redf, redi);
    pv = raw[best];
    pi = best;
    if (tid == 0) {
      out_top_ids[r * max_top + j] = best;
      out_top_lp[r * max_top + j] = pv - lse;
    }
  }
}

