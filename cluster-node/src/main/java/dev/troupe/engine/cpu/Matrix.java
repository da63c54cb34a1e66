package dev.troupe.engine.cpu;

import dev.troupe.engine.model.DType;
import dev.troupe.engine.model.ModelLoadException;
import dev.troupe.engine.model.WeightSource;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.util.List;

/**
 * A weight matrix {@code W [out, in]} on the Java heap in the dtype it is served in: BF16 or F16
 * kept as loaded (2 bytes per weight, packed in {@code int}s, see {@link Bf16Kernel}) or FP32.
 *
 * <p>16-bit rows are stored {@linkplain #tiled k-major} in groups of {@link #GROUP} rows (64 with
 * AVX-512): for each packed pair of input elements, the group's rows side by side, so one vector
 * holds the same pair of 16 output rows and a product needs no horizontal sums: a lane accumulates
 * one output, and the group streams through memory as one contiguous run, which the hardware
 * prefetcher follows. Against the earlier layout (groups of 4 rows interleaved by vector, one dot
 * product per row and activation row), one decode step's products measured 1.19–1.35× faster at
 * batch 1 and 1.46–2.2× at 8–32 rows ({@code StepProductsBench}, docs/benchmarks.md). Products
 * {@code y = x · Wᵀ} for a range of output rows run on the Vector API kernels; {@link Blas}
 * converts row tiles to FP32 for GEMM-sized batches. Rows are split into parts of under 2³¹
 * elements so any tensor fits.
 *
 * <p>Why the heap: the Vector API reads heap arrays with the same calls on Java 17 through 25,
 * while off-heap memory needs {@code ByteBuffer} loads on 17 and {@code MemorySegment} loads after
 * (docs/engine.md).
 */
final class Matrix {
  private static final long MAX_PART = Integer.MAX_VALUE - 64;

  /** Rows per group of the 16-bit layout: four vectors of the kernels' ints. */
  static final int GROUP = 4 * (VectorSupport.AVAILABLE ? Bf16Kernel.LANES : 16);

  final int out;
  final int in;
  final DType dtype;
  private final int rowInts; // 16-bit: ints per row (⌈in/2⌉); FP32: floats per row (in)
  private final int rowsPerPart;
  private final int[][] ints; // 16-bit parts
  private final float[][] floats; // FP32 parts

  private Matrix(int out, int in, DType dtype) {
    this.out = out;
    this.in = in;
    this.dtype = dtype;
    this.rowInts = dtype == DType.F32 ? in : (in + 1) / 2;
    // whole groups per part
    this.rowsPerPart =
        (int)
            Math.max(
                GROUP, Math.min(out + GROUP - 1L, MAX_PART / Math.max(1, rowInts)) / GROUP * GROUP);
    int parts = (out + rowsPerPart - 1) / rowsPerPart;
    if (dtype == DType.F32) {
      ints = null;
      floats = new float[parts][];
      for (int p = 0; p < parts; p++) floats[p] = new float[partRows(p) * rowInts];
    } else {
      floats = null;
      ints = new int[parts][];
      for (int p = 0; p < parts; p++)
        ints[p] = new int[(partRows(p) + GROUP - 1) / GROUP * GROUP * rowInts];
    }
  }

  int partRows(int p) {
    return Math.min(rowsPerPart, out - p * rowsPerPart);
  }

  /** Parts the rows are split into (each under 2³¹ elements). */
  int parts() {
    return (out + rowsPerPart - 1) / rowsPerPart;
  }

  /** Rows per part (whole groups); part {@code p} starts at row {@code p · rowsPerPart()}. */
  int rowsPerPart() {
    return rowsPerPart;
  }

  /** 16-bit: ints per row of the layout ({@code ⌈in/2⌉}). */
  int rowInts() {
    return rowInts;
  }

  /** Part {@code p} of a 16-bit matrix (tests). */
  int[] ints(int p) {
    return ints[p];
  }

  /** Bytes held. */
  long bytes() {
    long n = 0;
    if (ints != null) for (int[] a : ints) n += a.length;
    if (floats != null) for (float[] a : floats) n += a.length;
    return n * 4;
  }

  /**
   * Where int {@code k} of row {@code r} (counted from its part's first row) lies in the 16-bit
   * layout of {@code half} ints per row: group {@code r / GROUP} is {@code half} runs of {@link
   * #GROUP} ints, run {@code k} holding int {@code k} of each of the group's rows in order. The
   * last group of a part is padded with zero rows.
   */
  static int tiled(int r, int k, int half) {
    return (r / GROUP * half + k) * GROUP + r % GROUP;
  }

  boolean packed() {
    return dtype != DType.F32;
  }

  /** Floats per activation row this matrix reads ({@link Activations#stride}). */
  int xStride() {
    return Activations.stride(in, packed());
  }

  /** Tensors with equal {@code in} stacked along {@code out} (q, k, v), in {@code dtype}. */
  static Matrix load(WeightSource w, DType dtype, List<String> names) {
    int rows = 0, in = (int) (long) w.info(names.get(0)).shape().get(1);
    for (String n : names) rows += (int) (long) w.info(n).shape().get(0);
    Matrix m = new Matrix(rows, in, dtype);
    int at = 0;
    for (String n : names) {
      int r = (int) (long) w.info(n).shape().get(0);
      m.read(w, n, 0, r, at);
      at += r;
    }
    return m;
  }

  /**
   * gate and up ({@code [I, in]} each) interleaved in blocks of {@code block} rows (gate block 0,
   * up block 0, gate block 1, …), so a thread owning whole block pairs can apply SwiGLU to its own
   * output; {@link #gateUpRow} maps back.
   */
  static Matrix loadInterleaved(WeightSource w, DType dtype, String gate, String up, int block) {
    int inter = (int) (long) w.info(gate).shape().get(0);
    int in = (int) (long) w.info(gate).shape().get(1);
    Matrix m = new Matrix(2 * inter, in, dtype);
    for (int g0 = 0; g0 < inter; g0 += block) {
      int n = Math.min(block, inter - g0);
      m.read(w, gate, g0, n, 2 * g0);
      m.read(w, up, g0, n, 2 * g0 + n);
    }
    return m;
  }

  /**
   * For a fused gate/up matrix built with {@code block}: the gate/up row of fused row {@code f}, as
   * {@code row} for gate and {@code −1 − row} for up.
   */
  static int gateUpRow(int f, int inter, int block) {
    int g0 = f / (2 * block) * block;
    int n = Math.min(block, inter - g0);
    int within = f - 2 * g0;
    return within < n ? g0 + within : -1 - (g0 + within - n);
  }

  /** Rows {@code [r0, r0+n)} of tensor {@code name} into rows {@code dst..} of this matrix. */
  private void read(WeightSource w, String name, int r0, int n, int dst) {
    int chunkRows = Math.max(1, (1 << 22) / Math.max(1, in));
    float[] f = dtype == DType.F32 ? new float[Math.min(n, chunkRows) * in] : null;
    ByteBuffer b =
        dtype == DType.F32
            ? null
            : ByteBuffer.allocate(Math.min(n, chunkRows) * in * 2 + 4)
                .order(ByteOrder.LITTLE_ENDIAN);
    for (int done = 0; done < n; ) {
      int rows = Math.min(chunkRows, n - done);
      long off = (long) (r0 + done) * in;
      int count = rows * in;
      if (dtype == DType.F32) {
        w.copyTo(name, off, count, FloatBuffer.wrap(f, 0, count));
        for (int r = 0; r < rows; r++) {
          int row = dst + done + r, p = row / rowsPerPart;
          System.arraycopy(f, r * in, floats[p], (row - p * rowsPerPart) * in, in);
        }
      } else {
        b.clear();
        w.copyTo(name, off, count, b.asShortBuffer(), dtype);
        for (int r = 0; r < rows; r++) {
          int row = dst + done + r, p = row / rowsPerPart, local = row - p * rowsPerPart;
          int[] dstInts = ints[p];
          int at = tiled(local, 0, rowInts);
          if ((in & 1) == 0) {
            IntBuffer ib = b.position(r * in * 2).asIntBuffer();
            for (int k = 0; k < rowInts; k++) dstInts[at + k * GROUP] = ib.get(k);
          } else { // odd width: pairs restart at each row, the last int is half padding
            for (int k = 0; k < rowInts; k++) {
              int e = r * in + 2 * k;
              int lo = b.getShort(2 * e) & 0xffff;
              int hi = 2 * k + 1 < in ? b.getShort(2 * e + 2) & 0xffff : 0;
              dstInts[at + k * GROUP] = lo | hi << 16;
            }
          }
        }
      }
      done += rows;
    }
    if (dtype == DType.F16) refuseF16Specials(name, dst, n);
  }

  /**
   * F16 infinities and NaN: no released checkpoint has them, and the kernel's exact widening covers
   * finite values only ({@link F16Kernel#f16}), so a tensor holding one is refused.
   */
  private void refuseF16Specials(String name, int dst, int n) {
    for (int row = dst; row < dst + n; row++) {
      int p = row / rowsPerPart, local = row - p * rowsPerPart;
      for (int k = 0; k < rowInts; k++) {
        int v = ints[p][tiled(local, k, rowInts)];
        if ((v & 0x7c00) == 0x7c00 || (v & 0x7c000000) == 0x7c000000)
          throw new ModelLoadException(
              "tensor "
                  + name
                  + " holds an infinity or NaN (row "
                  + (row - dst)
                  + "); not servable as float16");
      }
    }
  }

  /** Row {@code r} as FP32 into {@code dst[off .. off+in)} (embedding lookup, GEMM tiles). */
  void rowTo(int r, float[] dst, int off) {
    int p = r / rowsPerPart, local = r - p * rowsPerPart;
    if (dtype == DType.F32) {
      System.arraycopy(floats[p], local * rowInts, dst, off, in);
      return;
    }
    boolean f16 = dtype == DType.F16;
    int[] w = ints[p];
    for (int k = 0, at = tiled(local, 0, rowInts); k < rowInts; k++, at += GROUP) {
      int v = w[at];
      dst[off + 2 * k] = Scalar16.lo(f16, v);
      if (2 * k + 1 < in) dst[off + 2 * k + 1] = Scalar16.hi(f16, v);
    }
  }

  /** Rows {@code [r0, r1)} as FP32, row-major, into {@code dst} (a GEMM tile). */
  void rowsTo(int r0, int r1, float[] dst) {
    for (int r = r0; r < r1; r++) rowTo(r, dst, (r - r0) * in);
  }

  /**
   * {@code y[b·yStride + yOff + o] (+)= x_b · W[o]} for {@code o ∈ [o0, o1)} and {@code rows}
   * activation rows in this matrix's layout ({@link #xStride()} floats apart).
   */
  void product(float[] x, int rows, float[] y, int yStride, int yOff, int o0, int o1, boolean add) {
    while (o0 < o1) {
      int p = o0 / rowsPerPart, pEnd = Math.min(o1, (p + 1) * rowsPerPart), row0 = p * rowsPerPart;
      if (dtype == DType.F32) {
        if (VectorSupport.AVAILABLE)
          Vec32.range(x, rows, in, floats[p], row0, y, yStride, yOff, o0, pEnd, add);
        else scalar32(x, rows, floats[p], row0, y, yStride, yOff, o0, pEnd, add);
      } else {
        boolean f16 = dtype == DType.F16;
        if (VectorSupport.AVAILABLE && f16)
          F16Kernel.range(x, rows, rowInts, ints[p], row0, y, yStride, yOff, o0, pEnd, add);
        else if (VectorSupport.AVAILABLE)
          Bf16Kernel.range(x, rows, rowInts, ints[p], row0, y, yStride, yOff, o0, pEnd, add);
        else Scalar16.range(f16, x, rows, rowInts, ints[p], row0, y, yStride, yOff, o0, pEnd, add);
      }
      o0 = pEnd;
    }
  }

  private void scalar32(
      float[] x,
      int rows,
      float[] w,
      int row0,
      float[] y,
      int yStride,
      int yOff,
      int o0,
      int o1,
      boolean add) {
    for (int o = o0; o < o1; o++)
      for (int b = 0; b < rows; b++) {
        float s = 0;
        for (int i = 0; i < in; i++) s += x[b * in + i] * w[(o - row0) * in + i];
        int yi = b * yStride + yOff + o;
        y[yi] = add ? y[yi] + s : s;
      }
  }
}
