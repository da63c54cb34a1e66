package dev.troupe.engine.cpu;

import static org.bytedeco.openblas.global.openblas.CblasNoTrans;
import static org.bytedeco.openblas.global.openblas.CblasRowMajor;
import static org.bytedeco.openblas.global.openblas.CblasTrans;
import static org.bytedeco.openblas.global.openblas.cblas_sgemm;
import static org.bytedeco.openblas.global.openblas.cblas_sgemv;

import dev.troupe.engine.model.WeightSource;
import java.nio.FloatBuffer;
import org.bytedeco.javacpp.FloatPointer;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;

/**
 * A weight matrix {@code W [out, in]} (row-major, FP32, off-heap in an ND4J array, plus a heap copy
 * for {@link DecodeKernels} when the Vector API is on and the heap has room) and the product {@code
 * y = x Wᵀ} for a batch of rows. Dispatch (measured per shape, docs/engine.md): one row → BLAS GEMV
 * (it streams the weights as fast as the kernel and far faster than a one-row GEMM); 2..31 rows →
 * {@link DecodeKernels} (2–3× OpenBLAS's GEMM with transposed W there); 32 or more rows → BLAS GEMM
 * (compute-bound, where the two are level and BLAS wins for prefill-sized batches).
 */
final class Linear implements AutoCloseable {
  private static final int CHUNK = 1 << 22;
  private static final long MAX_HEAP = Integer.MAX_VALUE - 8; // largest Java array

  /**
   * Most rows a product sends to {@link DecodeKernels}; more go to BLAS GEMM (measured,
   * docs/engine.md).
   */
  static final int KERNEL_MAX_ROWS = Integer.getInteger("troupe.engine.kernelMaxRows", 31);

  /** Fewest rows a product sends to {@link DecodeKernels}; one row goes to BLAS GEMV (measured). */
  static final int KERNEL_MIN_ROWS = Integer.getInteger("troupe.engine.kernelMinRows", 2);

  final INDArray w;
  private final FloatPointer weights; // W's off-heap data, for BLAS
  private final float[]
      heap; // W on the heap for DecodeKernels, or null (kernels unavailable / too big)
  final int out;
  final int in;

  Linear(INDArray w, float[] heap) {
    this.w = w;
    this.weights = new FloatPointer(w.data().addressPointer());
    this.out = w.rows();
    this.in = w.columns();
    this.heap = heap;
  }

  /**
   * Loads tensor {@code name} ([out, in]) converted to FP32; with a heap copy for {@link
   * DecodeKernels} when {@code budget} is non-null and has room (null: the matrix is only looked
   * up).
   */
  static Linear load(WeightSource src, HeapBudget budget, String name) {
    return stack(src, budget, name);
  }

  /**
   * Loads tensors with equal {@code in}, stacked along {@code out} (e.g. q, k, v); as {@link
   * #load}.
   */
  static Linear stack(WeightSource src, HeapBudget budget, String... names) {
    long rows = 0, in = src.info(names[0]).shape().get(1);
    for (String n : names) rows += src.info(n).shape().get(0);
    INDArray w = Nd4j.createUninitialized(DataType.FLOAT, rows, in);
    FloatPointer dst = new FloatPointer(w.data().addressPointer());
    float[] tmp = new float[(int) Math.min(CHUNK, rows * in)];
    float[] heap = budget == null ? null : budget.take(rows * in);
    long at = 0;
    for (String n : names) {
      long numel = src.info(n).numel();
      // bounded chunks: the heap never holds more than CHUNK floats of any tensor
      for (long off = 0; off < numel; off += CHUNK) {
        int len = (int) Math.min(CHUNK, numel - off);
        src.copyTo(n, off, len, FloatBuffer.wrap(tmp, 0, len));
        dst.position(at).put(tmp, 0, len);
        if (heap != null) System.arraycopy(tmp, 0, heap, (int) at, len);
        at += len;
      }
    }
    return new Linear(w, heap);
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
    if (useKernel(rows)) {
      float[] y = new float[rows * out];
      DecodeKernels.multiply(x, rows, in, heap, out, y);
      return y;
    }
    FloatPointer yp = product(scratch, x, rows);
    float[] y = new float[rows * out];
    yp.position(0).get(y, 0, y.length);
    return y;
  }

  /** As {@link #apply}, one array per row (the LM head: logits go to callers row by row). */
  float[][] applyRows(Scratch scratch, float[] x, int rows) {
    if (useKernel(rows)) {
      float[] flat = apply(scratch, x, rows);
      float[][] y = new float[rows][];
      for (int r = 0; r < rows; r++)
        y[r] = java.util.Arrays.copyOfRange(flat, r * out, (r + 1) * out);
      return y;
    }
    FloatPointer yp = product(scratch, x, rows);
    float[][] y = new float[rows][out];
    for (int r = 0; r < rows; r++) yp.position((long) r * out).get(y[r], 0, out);
    return y;
  }

  /** The dispatch rule: the heap kernel for 1..KERNEL_MAX_ROWS rows when it is available. */
  private boolean useKernel(int rows) {
    return heap != null && rows >= KERNEL_MIN_ROWS && rows <= KERNEL_MAX_ROWS;
  }

  private FloatPointer product(Scratch scratch, float[] x, int rows) {
    FloatPointer xp = scratch.in((long) rows * in), yp = scratch.out((long) rows * out);
    xp.position(0).put(x, 0, rows * in);
    if (rows == 1) {
      // matrix-vector: streams W once at full memory bandwidth (a one-row GEMM does not)
      cblas_sgemv(CblasRowMajor, CblasNoTrans, out, in, 1f, weights, in, xp, 1, 0f, yp, 1);
    } else {
      cblas_sgemm(
          CblasRowMajor,
          CblasNoTrans,
          CblasTrans,
          rows,
          out,
          in,
          1f,
          xp,
          in,
          weights,
          in,
          0f,
          yp,
          out);
    }
    return yp;
  }

  /**
   * How many floats of weights may be copied onto the Java heap for {@link DecodeKernels} (see
   * {@link #ofHeap}); a quarter of the maximum heap is kept for activations and the rest of the
   * node.
   */
  static final class HeapBudget {
    private long floats;
    long copied; // floats given out
    long refused; // floats of matrices that did not fit

    HeapBudget(long floats) {
      this.floats = floats;
    }

    /**
     * All or nothing: room for {@code needFloats} (every matrix the kernels would read) when that
     * fits both the heap left (given {@code otherBytes} the caller allocates too) and {@link
     * #MAX_COPY_MB}; otherwise none, and the model runs on BLAS alone exactly as without the
     * kernels.
     */
    static HeapBudget ofHeap(long needFloats, long otherBytes) {
      if (!DecodeKernels.AVAILABLE) return new HeapBudget(0);
      Runtime rt = Runtime.getRuntime();
      long used = rt.totalMemory() - rt.freeMemory();
      long room = Math.max(0, (rt.maxMemory() * 3 / 4 - used - otherBytes) / Float.BYTES);
      boolean fits = needFloats <= room && needFloats * Float.BYTES <= (MAX_COPY_MB << 20);
      return new HeapBudget(fits ? needFloats : 0);
    }

    /**
     * Largest total of heap copies, in MB ({@code troupe.engine.kernelHeapMB}, default 512).
     * Measured: the small bench model (346 MB of copies) gains and loses nothing elsewhere; with
     * the medium one (1,221 MB) prefill and batch-1 decode — BLAS paths that never read the copies
     * — ran 1.5–2× slower in every paired run (cause not found; see docs/benchmarks.md), so large
     * models stay on BLAS by default.
     */
    static final long MAX_COPY_MB = Long.getLong("troupe.engine.kernelHeapMB", 512);

    /** A new array of {@code n} floats charged to the budget, or null when it does not fit. */
    float[] take(long n) {
      if (!DecodeKernels.AVAILABLE) return null;
      if (n > MAX_HEAP || n > floats) {
        refused += n;
        return null;
      }
      floats -= n;
      copied += n;
      return new float[(int) n];
    }
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
