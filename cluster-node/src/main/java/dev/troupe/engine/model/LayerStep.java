package dev.troupe.engine.model;

/**
 * The steps of one decoder layer, in order, as transformers' {@code LlamaDecoderLayer} (and the
 * Mistral / Qwen2 / Qwen3 variants) computes them on the residual stream {@code x [T, hidden]}.
 * {@link TransformerLayout#steps()} lists those a config uses; a backend checks it implements each
 * of them, so a new architecture step cannot be skipped silently.
 */
public enum LayerStep {
  /** {@code h = x / sqrt(mean(x²) + eps) · input_layernorm}. */
  INPUT_NORM,
  /** {@code q = h W_qᵀ, k = h W_kᵀ, v = h W_vᵀ}. */
  QKV_PROJ,
  /** {@code q += b_q, k += b_k, v += b_v} (Qwen2). */
  QKV_BIAS,
  /** RMSNorm over each head's {@code head_dim} values of q and k, own gains (Qwen3). */
  QK_NORM,
  /**
   * Rotary embedding of q and k, {@code rotate_half} convention, angles from {@link RopeTables}.
   */
  ROPE,
  /**
   * Causal grouped-query attention: query head h reads KV head {@code h / (heads / kv_heads)},
   * {@code softmax(q kᵀ / sqrt(head_dim)) v} over positions {@code ≤ p} (and {@code > p − window}
   * with a sliding window).
   */
  ATTENTION,
  /** {@code x += attn W_oᵀ}. */
  O_PROJ,
  /** {@code h = x / sqrt(mean(x²) + eps) · post_attention_layernorm}. */
  POST_NORM,
  /** {@code g = h W_gateᵀ, u = h W_upᵀ}. */
  GATE_UP_PROJ,
  /** {@code a = silu(g) ∘ u}. */
  SWIGLU,
  /** {@code x += a W_downᵀ}. */
  DOWN_PROJ
}
