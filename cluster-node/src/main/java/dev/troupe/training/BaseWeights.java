package dev.troupe.training;

/**
 * Read access to a model's frozen weights by Hugging Face tensor name (e.g. {@code
 * model.layers.0.self_attn.q_proj.weight}), as row-major float arrays in the checkpoint's shape.
 */
public interface BaseWeights {
  boolean has(String name);

  /** The tensor's values; an unknown name is an {@link IllegalArgumentException}. */
  float[] tensor(String name);
}
