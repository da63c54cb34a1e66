package dev.troupe.engine.model;

import dev.troupe.engine.ModelConfig;

/**
 * The seven linear projections of a decoder layer, with their Hugging Face module names and shapes.
 * A weight is {@code [out, in]} row-major and applied as {@code y = x Wᵀ}; LoRA adapts these
 * modules (PEFT's {@code target_modules} are the {@link #shortName()}s).
 */
public enum Projection {
  Q("self_attn.q_proj"),
  K("self_attn.k_proj"),
  V("self_attn.v_proj"),
  O("self_attn.o_proj"),
  GATE("mlp.gate_proj"),
  UP("mlp.up_proj"),
  DOWN("mlp.down_proj");

  private final String module;

  Projection(String module) {
    this.module = module;
  }

  /** The module path inside a layer, e.g. {@code self_attn.q_proj}. */
  public String module() {
    return module;
  }

  /** PEFT's short name, e.g. {@code q_proj}. */
  public String shortName() {
    return module.substring(module.indexOf('.') + 1);
  }

  /** The module of layer {@code layer}, e.g. {@code model.layers.3.self_attn.q_proj}. */
  public String module(int layer) {
    return TransformerLayout.layerPrefix(layer) + module;
  }

  /** Input features. */
  public int in(ModelConfig c) {
    return switch (this) {
      case Q, K, V, GATE, UP -> c.hiddenSize();
      case O -> c.numHeads() * c.headDim();
      case DOWN -> c.intermediateSize();
    };
  }

  /** Output features. */
  public int out(ModelConfig c) {
    return switch (this) {
      case Q -> c.numHeads() * c.headDim();
      case K, V -> c.numKvHeads() * c.headDim();
      case O, DOWN -> c.hiddenSize();
      case GATE, UP -> c.intermediateSize();
    };
  }

  /** The projection whose {@link #shortName()} is {@code name}, or null. */
  public static Projection byShortName(String name) {
    for (Projection p : values()) if (p.shortName().equals(name)) return p;
    return null;
  }
}
