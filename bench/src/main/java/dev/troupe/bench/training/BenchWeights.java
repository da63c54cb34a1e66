package dev.troupe.bench.training;

import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.model.DType;
import dev.troupe.engine.model.ModelLoadException;
import dev.troupe.engine.model.WeightLayout;
import dev.troupe.engine.model.WeightSource;
import java.nio.FloatBuffer;
import java.util.Arrays;
import java.util.Collections;
import java.util.Map;
import java.util.SortedSet;
import java.util.SplittableRandom;
import java.util.TreeSet;

/** Random benchmark weights generated on demand (uniform with std 0.02; norms 1). */
final class BenchWeights implements WeightSource {
  private final Map<String, long[]> shapes;

  BenchWeights(ModelConfig c) {
    this.shapes = WeightLayout.expected(c);
  }

  @Override
  public SortedSet<String> names() {
    return Collections.unmodifiableSortedSet(new TreeSet<>(shapes.keySet()));
  }

  @Override
  public TensorInfo info(String name) {
    long[] s = shapes.get(name);
    if (s == null) throw new ModelLoadException("bench weights: missing tensor " + name);
    return new TensorInfo(name, DType.F32, Arrays.stream(s).boxed().toList(), "bench weights");
  }

  @Override
  public void copyTo(String name, long offset, int count, FloatBuffer dst) {
    boolean norm = name.endsWith("norm.weight");
    SplittableRandom r = new SplittableRandom(name.hashCode() * 31L + offset);
    double half = 0.02 * Math.sqrt(3);
    for (int i = 0; i < count; i++) dst.put(norm ? 1f : (float) ((r.nextDouble() * 2 - 1) * half));
  }

  @Override
  public String origin() {
    return "bench weights";
  }
}
