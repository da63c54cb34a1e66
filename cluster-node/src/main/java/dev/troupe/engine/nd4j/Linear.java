package dev.troupe.engine.nd4j;

import dev.troupe.engine.model.WeightSource;
import java.nio.FloatBuffer;
import org.bytedeco.javacpp.FloatPointer;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;

/**
 * A weight matrix {@code W [out, in]} (row-major, FP32, off-heap in ND4J) and the product {@code y =
 * x Wᵀ} for a batch of rows: one GEMV for a single row (it streams the weights far faster than a
 * one-row GEMM), one GEMM with transposed W otherwise.
 */
final class Linear implements AutoCloseable {
  private static final int CHUNK = 1 << 22;
  final INDArray w;
  final int out;
  final int in;

  private Linear(INDArray w) {
    this.w = w;
    this.out = (int) w.rows();
    this.in = (int) w.columns();
  }

  /** Loads tensor {@code name} ([out, in]) converted to FP32. */
  static Linear load(WeightSource src, String name) {
    return stack(src, name);
  }

  /** Loads tensors with equal {@code in}, stacked along {@code out} (e.g. q, k, v). */
  static Linear stack(WeightSource src, String... names) {
    long rows = 0, in = src.info(names[0]).shape().get(1);
    for (String n : names) rows += src.info(n).shape().get(0);
    INDArray w = Nd4j.createUninitialized(DataType.FLOAT, rows, in);
    FloatPointer dst = new FloatPointer(w.data().addressPointer());
    float[] tmp = new float[(int) Math.min(CHUNK, rows * in)];
    long at = 0;
    for (String n : names) {
      long numel = src.info(n).numel();
      // bounded chunks: the heap never holds more than CHUNK floats of any tensor
      for (long off = 0; off < numel; off += CHUNK) {
        int len = (int) Math.min(CHUNK, numel - off);
        src.copyTo(n, off, len, FloatBuffer.wrap(tmp, 0, len));
        dst.position(at).put(tmp, 0, len);
        at += len;
      }
    }
    return new Linear(w);
  }

  /** Copies row {@code r} of W into {@code dst[off ..]} (embedding lookup). */
  void row(int r, float[] dst, int off) {
    new FloatPointer(w.data().addressPointer()).position((long) r * in).get(dst, off, in);
  }

  /** {@code y [rows, out] = x [rows, in] · Wᵀ}. */
  float[] apply(float[] x, int rows) {
    INDArray xs = Nd4j.create(x, new long[] {rows, in}, DataType.FLOAT);
    INDArray y;
    if (rows == 1) {
      y = Nd4j.createUninitialized(DataType.FLOAT, out);
      Nd4j.getBlasWrapper().level2().gemv('c', 'N', 1.0, w, xs.reshape(in), 0.0, y);
    } else {
      y = Nd4j.gemm(xs, w, false, true);
    }
    float[] r = new float[rows * out];
    new FloatPointer(y.data().addressPointer()).get(r, 0, r.length);
    xs.close();
    y.close();
    return r;
  }

  @Override
  public void close() {
    w.close();
  }
}
