package dev.troupe.engine.model;

import dev.troupe.engine.ModelConfig;
import java.nio.FloatBuffer;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.SortedSet;
import java.util.TreeSet;
import java.util.stream.LongStream;

/**
 * The built-in demo model: a tiny Qwen3 with Qwen3's vocabulary whose weights are drawn from a
 * fixed seed (normal, std 0.02; norm weights 1) when first read. No files, no downloads; its output
 * is random text until it is trained.
 */
public final class DemoModel {
  public static final long SEED = 20250611L;
  static final double STD = 0.02;
  private static final long BLOCK = 1 << 16;

  private DemoModel() {}

  /** Qwen3 layout, vocabulary 151936, hidden 128, 2 layers, 4 heads / 2 KV heads of 32. */
  public static ModelConfig config() {
    return new ModelConfig(
        "Qwen3ForCausalLM",
        151936,
        128,
        384,
        2,
        4,
        2,
        32,
        4096,
        1e-6,
        1_000_000.0,
        null,
        true,
        false,
        true,
        null,
        List.of(151645, 151643));
  }

  /** The demo weights, generated deterministically per tensor. */
  public static WeightSource weights() {
    return new Generated(config());
  }

  private static final class Generated implements WeightSource {
    private final Map<String, long[]> shapes;

    Generated(ModelConfig c) {
      this.shapes = WeightLayout.expected(c);
    }

    @Override
    public SortedSet<String> names() {
      return Collections.unmodifiableSortedSet(new TreeSet<>(shapes.keySet()));
    }

    @Override
    public TensorInfo info(String name) {
      long[] s = shapes.get(name);
      if (s == null) throw new ModelLoadException("demo model: missing tensor " + name);
      return new TensorInfo(name, DType.F32, java.util.Arrays.stream(s).boxed().toList(), "demo model");
    }

    @Override
    public void copyTo(String name, long offset, int count, FloatBuffer dst) {
      if (offset < 0 || count < 0 || offset + count > info(name).numel())
        throw new IndexOutOfBoundsException(name + ": range " + offset + "+" + count);
      if (name.endsWith("norm.weight")) {
        for (int i = 0; i < count; i++) dst.put(1f);
        return;
      }
      // Independent streams per (tensor, block of BLOCK elements), so any range can be produced
      // without generating the tensor from its start.
      long end = offset + count;
      int at = dst.position();
      // blocks are independent streams, so they are generated in parallel (same values)
      LongStream.range(offset / BLOCK, (end + BLOCK - 1) / BLOCK)
          .parallel()
          .forEach(
              block -> {
                Random r = new Random(SEED * 1_000_003L + name.hashCode() * 65_537L + block);
                long from = block * BLOCK;
                long to = Math.min(end, from + BLOCK);
                for (long i = from; i < to; i++) {
                  float v = (float) (r.nextGaussian() * STD);
                  if (i >= offset) dst.put(at + (int) (i - offset), v);
                }
              });
      dst.position(at + count);
    }

    @Override
    public String origin() {
      return "demo model";
    }
  }
}
