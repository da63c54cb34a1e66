package dev.troupe.engine.model;

import java.nio.FloatBuffer;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.SortedSet;
import java.util.TreeSet;

/**
 * Named FP32 tensors held in Java arrays (LoRA adapters and optimizer state on their way to a
 * checkpoint, small test models), readable as any {@link WeightSource}.
 */
public final class InMemoryWeights implements WeightSource {
  private final Map<String, Tensor> tensors;
  private final String origin;

  /** A row-major tensor. */
  public record Tensor(float[] values, long[] shape) {
    public Tensor {
      long n = 1;
      for (long s : shape) n *= s;
      if (n != values.length)
        throw new IllegalArgumentException(
            "shape " + Arrays.toString(shape) + " does not match " + values.length + " values");
    }
  }

  /** The tensors in their map's order (the order {@link SafetensorsWriter} writes them). */
  public InMemoryWeights(Map<String, Tensor> tensors, String origin) {
    this.tensors = Collections.unmodifiableMap(new LinkedHashMap<>(tensors));
    this.origin = origin;
  }

  /** Names in insertion order. */
  public Iterable<String> order() {
    return tensors.keySet();
  }

  @Override
  public SortedSet<String> names() {
    return Collections.unmodifiableSortedSet(new TreeSet<>(tensors.keySet()));
  }

  @Override
  public TensorInfo info(String name) {
    Tensor t = tensors.get(name);
    if (t == null) throw new ModelLoadException(origin + ": missing tensor " + name);
    return new TensorInfo(name, DType.F32, Arrays.stream(t.shape()).boxed().toList(), origin);
  }

  @Override
  public void copyTo(String name, long offset, int count, FloatBuffer dst) {
    info(name);
    dst.put(tensors.get(name).values(), Math.toIntExact(offset), count);
  }

  @Override
  public String origin() {
    return origin;
  }
}
