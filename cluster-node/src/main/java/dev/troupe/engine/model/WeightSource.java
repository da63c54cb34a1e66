package dev.troupe.engine.model;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.ShortBuffer;
import java.util.Arrays;
import java.util.List;
import java.util.SortedSet;

/**
 * Named weight tensors, read piecewise so a loader never holds two copies of the whole model: in
 * their stored dtype ({@link #copyStored}, e.g. BF16 bytes for a GPU upload), as 16-bit values
 * ({@link #copyTo(String, long, int, ShortBuffer, DType)}: a BF16 checkpoint stays BF16), or
 * converted to FP32 ({@link #copyTo(String, long, int, FloatBuffer)}). Which tensors a model has is
 * {@link TransformerLayout}'s business. Implemented by the safetensors reader ({@link
 * SafetensorsWeights}), seeded random weights ({@link RandomWeights}) and in-memory tensors ({@link
 * InMemoryWeights}). Thread-safe for reads; {@link #close()} releases mapped files.
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

  /**
   * Copies {@code count} elements from element {@code offset} into {@code dst} at its position as
   * 16-bit patterns of {@code as} (BF16 or F16): verbatim when stored so, else rounded to nearest
   * even from the stored value.
   */
  default void copyTo(String name, long offset, int count, ShortBuffer dst, DType as) {
    if (as == DType.F32) throw new IllegalArgumentException("F32 is not a 16-bit dtype");
    float[] tmp = new float[Math.min(count, 1 << 16)];
    for (int done = 0; done < count; ) {
      int n = Math.min(tmp.length, count - done);
      copyTo(name, offset + done, n, FloatBuffer.wrap(tmp, 0, n));
      for (int i = 0; i < n; i++) dst.put(as.fromFloat(tmp[i]));
      done += n;
    }
  }

  /**
   * Copies {@code count} elements from element {@code offset} into {@code dst} at its position as
   * stored: {@code info(name).dtype()} bytes, little-endian (what a device upload wants).
   */
  default void copyStored(String name, long offset, int count, ByteBuffer dst) {
    DType t = info(name).dtype();
    ByteBuffer le = dst.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    if (t == DType.F32) copyTo(name, offset, count, le.asFloatBuffer());
    else copyTo(name, offset, count, le.asShortBuffer(), t);
    dst.position(dst.position() + count * t.bytes());
  }

  /** The tensor as 16-bit patterns of {@code as} (BF16 or F16); for tensors under 2^31. */
  default short[] shorts(String name, DType as) {
    TensorInfo t = info(name);
    long n = t.numel();
    if (n > Integer.MAX_VALUE - 8)
      throw new ModelLoadException(t.origin() + ": tensor " + name + " too large for a short[]");
    short[] out = new short[(int) n];
    copyTo(name, 0, (int) n, ShortBuffer.wrap(out), as);
    return out;
  }

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
