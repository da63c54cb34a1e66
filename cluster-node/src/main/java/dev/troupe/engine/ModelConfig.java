package dev.troupe.engine;

import java.util.List;

/**
 * The architecture of a decoder-only transformer, as read from a Hugging Face {@code config.json}.
 *
 * @param architecture e.g. {@code LlamaForCausalLM}, {@code Qwen3ForCausalLM}
 * @param headDim per-head dimension ({@code head_dim}, else hidden / heads)
 * @param attentionBias q/k/v projections carry a bias (Qwen2)
 * @param qkNorm per-head RMSNorm on q and k before RoPE (Qwen3)
 * @param ropeScaling null, or Llama 3 style frequency scaling
 * @param eosTokenIds end-of-sequence ids from config.json / generation_config.json
 * @param slidingWindow attend only to the last {@code slidingWindow} positions (Mistral's {@code
 *     sliding_window}); 0 = full causal attention
 */
public record ModelConfig(
    String architecture,
    int vocabSize,
    int hiddenSize,
    int intermediateSize,
    int numLayers,
    int numHeads,
    int numKvHeads,
    int headDim,
    int maxPositionEmbeddings,
    double rmsNormEps,
    double ropeTheta,
    RopeScaling ropeScaling,
    boolean tieWordEmbeddings,
    boolean attentionBias,
    boolean qkNorm,
    Integer bosTokenId,
    List<Integer> eosTokenIds,
    int slidingWindow) {

  public ModelConfig {
    eosTokenIds = eosTokenIds == null ? List.of() : List.copyOf(eosTokenIds);
    if (slidingWindow < 0) throw new IllegalArgumentException("negative sliding window");
    if (numHeads % numKvHeads != 0)
      throw new IllegalArgumentException(
          "num_attention_heads "
              + numHeads
              + " is not a multiple of num_key_value_heads "
              + numKvHeads);
  }

  /** Llama 3 {@code rope_scaling} ({@code rope_type: llama3}). */
  public record RopeScaling(
      String type,
      double factor,
      double lowFreqFactor,
      double highFreqFactor,
      int originalMaxPositionEmbeddings) {}
}
