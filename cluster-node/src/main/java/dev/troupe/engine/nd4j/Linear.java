package dev.troupe.engine.nd4j;

import dev.troupe.engine.model.WeightSource;
import java.nio.FloatBuffer;
import static org.bytedeco.openblas.global.openblas.CblasNoTrans;
import static org.bytedeco.openblas.global.openblas.CblasRowMajor;
import static org.bytedeco.openblas.global.openblas.CblasTrans;
import static org.bytedeco.openblas.global.openblas.cblas_sgemm;
import static org.bytedeco.openblas.global.openblas.cblas_sgemv;

import org.bytedeco.javacpp.FloatPointer;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;

/**
 * A weight matrix {@code W [out, in]} (row-major, FP32, off-heap in an ND4J array) and the product
 * {@code y = x Wᵀ} for a batch of rows: one GEMV for a single row (it streams the weights far faster
 * than a one-row GEMM), one GEMM with transposed W otherwise.
 */
final class Linear implements AutoCloseable {
  private static final int CHUNK = 1 << 22;
  final INDArray w;
  private final FloatPointer weights; // W's off-heap data, for BLAS
  final int out;
  final int in;

  Linear(INDArray w) {
    this.w = w;
    this.weights = new FloatPointer(w.data().addressPointer());
    this.out = w.rows();
    this.in = w.columns();
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
    new FloatPointer(weights).position((long) r * in).get(dst, off, in);
  }

  /**
   * {@code y [rows, out] = x [rows, in] · Wᵀ}, straight into OpenBLAS (the library ND4J itself
   * calls): going through INDArray creation and ND4J's op layer cost ~0.5 ms per product, more than
   * streaming a layer's weights, so activations are staged in {@code scratch}'s off-heap buffers.
   */
  float[] apply(Scratch scratch, float[] x, int rows) {
    FloatPointer yp = product(scratch, x, rows);
    float[] y = new float[rows * out];
    yp.position(0).get(y, 0, y.length);
    return y;
  }

  /** As {@link #apply}, one array per row (the LM head: logits go to callers row by row). */
  float[][] applyRows(Scratch scratch, float[] x, int rows) {
    FloatPointer yp = product(scratch, x, rows);
    float[][] y = new float[rows][out];
    for (int r = 0; r < rows; r++) yp.position((long) r * out).get(y[r], 0, out);
    return y;
  }

  private FloatPointer product(Scratch scratch, float[] x, int rows) {
    FloatPointer xp = scratch.in((long) rows * in), yp = scratch.out((long) rows * out);
    xp.position(0).put(x, 0, rows * in);
    if (rows == 1) {
      // matrix-vector: streams W once at full memory bandwidth (a one-row GEMM does not)
      cblas_sgemv(CblasRowMajor, CblasNoTrans, out, in, 1f, weights, in, xp, 1, 0f, yp, 1);
    } else {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, out, in, 1f, xp, in, weights, in, 0f, yp, out);
    }
    return yp;
  }

  /** Reusable off-heap staging buffers for BLAS calls, by slot; one set per runner (its thread). */
  static final class Scratch {
    static final int IN = 0, OUT = 1;
    private final FloatPointer[] bufs = new FloatPointer[8];

    FloatPointer in(long n) {
      return buf(IN, n);
    }

    FloatPointer out(long n) {
      return buf(OUT, n);
    }

    /** A buffer of at least {@code n} floats, positioned at 0; contents undefined. */
    FloatPointer buf(int slot, long n) {
      FloatPointer p = bufs[slot];
      if (p == null || p.capacity() < n) {
        if (p != null) p.close();
        // grow geometrically so a slowly growing context does not reallocate every step
        p = bufs[slot] = new FloatPointer(Math.max(n, p == null ? 0 : p.capacity() * 3 / 2));
      }
      return p.position(0);
    }

    void close() {
      for (FloatPointer p : bufs) if (p != null) p.close();
    }
  }

  @Override
  public void close() {
    w.close();
  }
}
