package dev.troupe.engine.testing;

import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.model.DType;
import dev.troupe.engine.model.ModelLoadException;
import dev.troupe.engine.model.TransformerLayout;
import dev.troupe.engine.model.WeightSource;
import java.nio.FloatBuffer;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.SortedSet;
import java.util.TreeSet;

/**
 * Weights held in memory as float arrays, shaped by {@link TransformerLayout} (tests, merged LoRA).
 */
public final class MapWeights implements WeightSource {
  private final Map<String, float[]> data;
  private final Map<String, long[]> shapes;

  public MapWeights(ModelConfig c, Map<String, float[]> data) {
    this.data = new LinkedHashMap<>(data);
    this.shapes = TransformerLayout.of(c).tensors();
  }

  /** Copies every tensor of {@code w} into memory. */
  public static MapWeights copyOf(ModelConfig c, WeightSource w) {
    Map<String, float[]> m = new LinkedHashMap<>();
    for (String n : w.names()) m.put(n, w.floats(n));
    return new MapWeights(c, m);
  }

  /** The mutable tensor {@code name}. */
  public float[] get(String name) {
    return data.get(name);
  }

  @Override
  public SortedSet<String> names() {
    return Collections.unmodifiableSortedSet(new TreeSet<>(data.keySet()));
  }

  @Override
  public TensorInfo info(String name) {
    float[] v = data.get(name);
    if (v == null) throw new ModelLoadException("in-memory weights: missing tensor " + name);
    long[] s = shapes.getOrDefault(name, new long[] {v.length});
    return new TensorInfo(name, DType.F32, Arrays.stream(s).boxed().toList(), "in-memory weights");
  }

  @Override
  public void copyTo(String name, long offset, int count, FloatBuffer dst) {
    info(name);
    dst.put(data.get(name), (int) offset, count);
  }

  @Override
  public String origin() {
    return "in-memory weights";
  }
}
