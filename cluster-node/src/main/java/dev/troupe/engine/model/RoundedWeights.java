package dev.troupe.engine.model;

import java.nio.ByteBuffer;
import java.nio.FloatBuffer;
import java.nio.ShortBuffer;
import java.util.SortedSet;

/**
 * A {@link WeightSource} whose values are those of another rounded to a 16-bit dtype: what a model
 * served in that dtype computes with. The trainer reads its base model through this view so it
 * trains the weights that are served ({@link ServedDType}). 1-D tensors (norm gains, biases) are
 * kept as stored: the runners keep them in FP32.
 */
public final class RoundedWeights implements WeightSource {
  private final WeightSource src;
  private final DType dtype;

  private RoundedWeights(WeightSource src, DType dtype) {
    this.src = src;
    this.dtype = dtype;
  }

  /** {@code src} seen in {@code dtype}; {@code src} itself for F32. */
  public static WeightSource of(WeightSource src, DType dtype) {
    return dtype == DType.F32 ? src : new RoundedWeights(src, dtype);
  }

  private boolean rounded(String name) {
    return src.info(name).shape().size() >= 2;
  }

  @Override
  public SortedSet<String> names() {
    return src.names();
  }

  @Override
  public TensorInfo info(String name) {
    TensorInfo t = src.info(name);
    return rounded(name) ? new TensorInfo(t.name(), dtype, t.shape(), t.origin()) : t;
  }

  @Override
  public void copyTo(String name, long offset, int count, FloatBuffer dst) {
    if (!rounded(name)) {
      src.copyTo(name, offset, count, dst);
      return;
    }
    short[] tmp = new short[Math.min(count, 1 << 16)];
    for (int done = 0; done < count; ) {
      int n = Math.min(tmp.length, count - done);
      src.copyTo(name, offset + done, n, ShortBuffer.wrap(tmp, 0, n), dtype);
      for (int i = 0; i < n; i++) dst.put(dtype.toFloat(tmp[i]));
      done += n;
    }
  }

  @Override
  public void copyTo(String name, long offset, int count, ShortBuffer dst, DType as) {
    if (as == dtype || !rounded(name)) src.copyTo(name, offset, count, dst, as);
    else WeightSource.super.copyTo(name, offset, count, dst, as);
  }

  @Override
  public void copyStored(String name, long offset, int count, ByteBuffer dst) {
    if (!rounded(name)) src.copyStored(name, offset, count, dst);
    else WeightSource.super.copyStored(name, offset, count, dst);
  }

  @Override
  public String origin() {
    return src.origin();
  }

  @Override
  public void close() {
    src.close();
  }
}
