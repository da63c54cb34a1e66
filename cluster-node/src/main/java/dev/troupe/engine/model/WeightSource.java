package dev.troupe.engine.model;

import java.nio.FloatBuffer;
import java.util.Arrays;
import java.util.List;
import java.util.SortedSet;

/**
 * Named weight tensors of a model, converted to FP32 on demand so a loader never holds two copies
 * of the whole model. Implemented by the safetensors reader ({@link SafetensorsWeights}) and by the
 * in-memory demo model. Thread-safe for reads; {@link #close()} releases mapped files.
 */
public interface WeightSource extends AutoCloseable {

  /** Names of all tensors, sorted. */
  SortedSet<String> names();

  /** Shape, dtype and origin of one tensor; a {@link ModelLoadException} if it is absent. */
  TensorInfo info(String name);

  /**
   * Copies {@code count} elements of tensor {@code name} (row-major), from element {@code offset},
   * converted to FP32, into {@code dst} at its position.
   */
  void copyTo(String name, long offset, int count, FloatBuffer dst);

  /** Copies the whole tensor, converted to FP32, into {@code dst} at its position. */
  default void copyTo(String name, FloatBuffer dst) {
    long n = info(name).numel();
    for (long off = 0; off < n; off += 1 << 26)
      copyTo(name, off, (int) Math.min(1 << 26, n - off), dst);
  }

  /** The tensor as a new FP32 array, row-major; for tensors under 2^31 elements. */
  default float[] floats(String name) {
    TensorInfo t = info(name);
    long n = t.numel();
    if (n > Integer.MAX_VALUE - 8)
      throw new ModelLoadException(t.origin() + ": tensor " + name + " too large for a float[]");
    float[] out = new float[(int) n];
    copyTo(name, FloatBuffer.wrap(out));
    return out;
  }

  /** Where the weights come from, for error messages (a directory, the files, "demo model"). */
  String origin();

  default boolean contains(String name) {
    return names().contains(name);
  }

  @Override
  default void close() {}

  /**
   * @param origin where the tensor comes from (file path, or "demo model")
   */
  record TensorInfo(String name, DType dtype, List<Long> shape, String origin) {
    public TensorInfo {
      shape = List.copyOf(shape);
    }

    public long numel() {
      long n = 1;
      for (long d : shape) n *= d;
      return n;
    }

    public boolean hasShape(long... expected) {
      return shape.equals(Arrays.stream(expected).boxed().toList());
    }
  }
}
