package dev.troupe.bench.engine;

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

/** Random weights for a benchmark model, generated on demand (uniform, std 0.02; norms 1). */
final class RandomWeights implements WeightSource {
  private static final long BLOCK = 1 << 16;
  private static final double HALF_WIDTH = 0.02 * Math.sqrt(3);
  private final Map<String, long[]> shapes;

  RandomWeights(ModelConfig c) {
    this.shapes = WeightLayout.expected(c);
  }

  @Override
  public SortedSet<String> names() {
    return Collections.unmodifiableSortedSet(new TreeSet<>(shapes.keySet()));
  }

  @Override
  public TensorInfo info(String name) {
    long[] s = shapes.get(name);
    if (s == null) throw new ModelLoadException("bench model: missing tensor " + name);
    return new TensorInfo(name, DType.F32, Arrays.stream(s).boxed().toList(), "bench model");
  }

  @Override
  public void copyTo(String name, long offset, int count, FloatBuffer dst) {
    if (name.endsWith("norm.weight")) {
      for (int i = 0; i < count; i++) dst.put(1f);
      return;
    }
    long end = offset + count;
    for (long b = offset / BLOCK; b * BLOCK < end; b++) {
      SplittableRandom r = new SplittableRandom(name.hashCode() * 1_000_003L + b);
      for (long i = b * BLOCK, to = Math.min(end, (b + 1) * BLOCK); i < to; i++) {
        float v = (float) ((r.nextDouble() * 2 - 1) * HALF_WIDTH);
        if (i >= offset) dst.put(v);
      }
    }
  }

  @Override
  public String origin() {
    return "bench model";
  }
}
