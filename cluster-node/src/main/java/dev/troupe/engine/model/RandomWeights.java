package dev.troupe.engine.model;

import dev.troupe.engine.ModelConfig;
import java.nio.FloatBuffer;
import java.util.Arrays;
import java.util.Collections;
import java.util.Map;
import java.util.Random;
import java.util.SortedSet;
import java.util.TreeSet;
import java.util.stream.LongStream;

/**
 * Seeded random weights for any {@link ModelConfig}, generated when read: normal with a given std,
 * norm weights 1. The demo model and the benchmark models use it. Every (tensor, block of 64 Ki
 * elements) is an independent stream, so any range can be produced without generating the tensor
 * from its start, blocks are generated in parallel, and the values never depend on how a reader
 * windows its reads.
 */
public final class RandomWeights implements WeightSource {
  private static final long BLOCK = 1 << 16;

  private final Map<String, long[]> shapes;
  private final long seed;
  private final double std;
  private final String origin;

  public RandomWeights(ModelConfig config, long seed, double std, String origin) {
    this.shapes = TransformerLayout.of(config).tensors();
    this.seed = seed;
    this.std = std;
    this.origin = origin;
  }

  @Override
  public SortedSet<String> names() {
    return Collections.unmodifiableSortedSet(new TreeSet<>(shapes.keySet()));
  }

  @Override
  public TensorInfo info(String name) {
    long[] s = shapes.get(name);
    if (s == null) throw new ModelLoadException(origin + ": missing tensor " + name);
    return new TensorInfo(name, DType.F32, Arrays.stream(s).boxed().toList(), origin);
  }

  @Override
  public void copyTo(String name, long offset, int count, FloatBuffer dst) {
    if (offset < 0 || count < 0 || offset + count > info(name).numel())
      throw new IndexOutOfBoundsException(name + ": range " + offset + "+" + count);
    if (name.endsWith("norm.weight")) {
      for (int i = 0; i < count; i++) dst.put(1f);
      return;
    }
    long end = offset + count;
    int at = dst.position();
    LongStream.range(offset / BLOCK, (end + BLOCK - 1) / BLOCK)
        .parallel()
        .forEach(
            block -> {
              Random r = new Random(seed * 1_000_003L + name.hashCode() * 65_537L + block);
              long from = block * BLOCK;
              long to = Math.min(end, from + BLOCK);
              for (long i = from; i < to; i++) {
                float v = (float) (r.nextGaussian() * std);
                if (i >= offset) dst.put(at + (int) (i - offset), v);
              }
            });
    dst.position(at + count);
  }

  @Override
  public String origin() {
    return origin;
  }
}
